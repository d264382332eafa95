package benchkit

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/ingest"
)

func TestPercentilesAndMedian(t *testing.T) {
	d := Durations{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	if d.P(0) != 1 || d.P(50) != 5 || d.P(90) != 9 || d.P(100) != 10 || d.Max() != 10 {
		t.Fatalf("p0 %v p50 %v p90 %v p100 %v max %v", d.P(0), d.P(50), d.P(90), d.P(100), d.Max())
	}
	if (Durations{}).P(99) != 0 {
		t.Fatal("no durations: want 0")
	}
	if m := Median([]float64{3, 1, 2}); m != 2 {
		t.Fatalf("median %v", m)
	}
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.4: "1,234,567", -5000: "-5,000"} {
		if got := Thousands(in); got != want {
			t.Fatalf("Thousands(%v) = %q, want %q", in, got, want)
		}
	}
}

// A delivery's request carries the platform's headers and verifies.
func TestDeliveryRequest(t *testing.T) {
	got := make(chan *http.Request, 1)
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		got <- r
	}))
	defer srv.Close()
	d := NewDelivery("s3cret", "wh-1", "orders/create", []byte(`{"id":1}`))
	d.TriggeredAt = "2026-03-09T10:00:00Z"
	req, err := d.Request(context.Background(), srv.URL+EventsPath, "shop.example.com")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := Client(1, 5*time.Second).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := <-got
	h := r.Header
	if r.URL.Path != EventsPath || h.Get(ingest.HeaderWebhookID) != "wh-1" || h.Get(ingest.HeaderTopic) != "orders/create" ||
		h.Get(ingest.HeaderShopDomain) != "shop.example.com" || h.Get(ingest.HeaderTriggeredAt) != d.TriggeredAt {
		t.Fatalf("path %s, headers %v", r.URL.Path, h)
	}
	if !ingest.VerifyCommerce([]byte("s3cret"), body, h.Get(ingest.HeaderHMAC)) {
		t.Fatal("signature does not verify")
	}
}

func TestPaceKeepsTheSchedule(t *testing.T) {
	start := time.Now()
	var last time.Time
	n := 0
	Pace(start, time.Millisecond, 20, func(i int, at time.Time) {
		if i != n || !at.Equal(start.Add(time.Duration(i)*time.Millisecond)) || time.Now().Before(at) {
			t.Fatalf("call %d: slot %d at %v", n, i, at.Sub(start))
		}
		n++
		last = at
	})
	if n != 20 || last.Sub(start) != 19*time.Millisecond {
		t.Fatalf("%d calls, last slot at %v", n, last.Sub(start))
	}
}

// This process's CPU time, read both ways, grows when it works.
func TestCPUTimes(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err) // the benchmarks read /proc: they run on Linux only
	}
	self := SelfCPU()
	// Work until getrusage counts 200 ms of CPU (however loaded the
	// machine is), then /proc must count about as much.
	guard := time.Now().Add(time.Minute)
	for x := 0; SelfCPU()-self < 200*time.Millisecond; x++ {
		_ = x * x
		if time.Now().After(guard) {
			t.Fatalf("getrusage counted %v of CPU in a minute of work", SelfCPU()-self)
		}
	}
	after, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 150*time.Millisecond {
		t.Fatalf("after 200 ms of CPU by getrusage, /proc says %v more", after-before)
	}
}

// PaceUntil keeps the schedule, stops when fn says so, and calls no slot
// due after its context ends.
func TestPaceUntil(t *testing.T) {
	start := time.Now()
	n := 0
	PaceUntil(context.Background(), start, time.Millisecond, func(i int, at time.Time) bool {
		if i != n || !at.Equal(start.Add(time.Duration(i)*time.Millisecond)) || time.Now().Before(at) {
			t.Fatalf("call %d: slot %d at %v", n, i, at.Sub(start))
		}
		n++
		return n < 5
	})
	if n != 5 {
		t.Fatalf("%d calls, want 5", n)
	}
	start = time.Now()
	deadline := start.Add(60 * time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	n = 0
	PaceUntil(ctx, start, 20*time.Millisecond, func(_ int, at time.Time) bool {
		if !at.Before(deadline) {
			t.Fatalf("slot at %v called, the context ends at 60ms", at.Sub(start))
		}
		n++
		return true
	})
	if n < 1 || n > 3 {
		t.Fatalf("%d calls in 60 ms at 20 ms slots", n)
	}
	<-ctx.Done()
	cancelled, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	for _, ended := range []context.Context{ctx, cancelled} {
		n = 0
		PaceUntil(ended, time.Now(), time.Millisecond, func(int, time.Time) bool { n++; return true })
		if n != 0 {
			t.Fatalf("%d calls after the context ended", n)
		}
	}
}

// A ClientFrom client's connections leave from the address it is given.
func TestClientFromBindsTheSourceAddress(t *testing.T) {
	peers := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peers <- r.RemoteAddr
	}))
	defer srv.Close()
	resp, err := ClientFrom("127.0.0.3", 1, 5*time.Second).Get(srv.URL)
	if err != nil {
		t.Fatal(err) // on Linux all of 127.0.0.0/8 is the loopback interface
	}
	resp.Body.Close()
	if host, _, _ := net.SplitHostPort(<-peers); host != "127.0.0.3" {
		t.Fatalf("peer %s, want 127.0.0.3", host)
	}
}

// This process's resident memory grows when it touches new memory.
func TestProcessRSS(t *testing.T) {
	debug.FreeOSMemory() // memory freed earlier in this process would not grow it
	before, err := ProcessRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	after, err := ProcessRSS(os.Getpid())
	runtime.KeepAlive(b)
	if err != nil {
		t.Fatal(err)
	}
	if before <= 0 || after-before < 32<<20 {
		t.Fatalf("rss %d bytes, then %d after touching 64 MiB", before, after)
	}
	if _, err := ProcessRSS(-1); err == nil {
		t.Fatal("rss of no process: want an error")
	}
}
