package benchkit

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
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
	deadline := time.Now().Add(300 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	after, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 100*time.Millisecond || SelfCPU()-self < 100*time.Millisecond {
		t.Fatalf("after 300 ms of work: /proc says %v more, getrusage %v more", after-before, SelfCPU()-self)
	}
}
