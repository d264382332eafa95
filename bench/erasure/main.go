// Command erasure measures the customers/redact figures of issue 7 on a
// shop of many customers: it generates the shop with `cgp dev generate`
// (or reuses a data directory generated before), starts the cgp binary on
// it, waits until the read models caught up, then, one after the other,
// records a customer by a signed customers/create and erases it by a
// signed customers/redact, measuring
//
//   - the acknowledgement: the time until the customers/redact answer;
//
//   - the pipeline: from sending the customers/redact until the server
//     logs "customer erasure complete" for the customer (key shredded,
//     enrollments exited, audit entry recorded, every read model nulled,
//     stored answers forgotten, the read models' WAL checkpointed).
//
//     go run ./bench/erasure -bin bin/cgp -data /work/benchdata/erase-1m -customers 1000000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
	"github.com/cgp-platform/cgp/domain"
)

type options struct {
	bin, data  string
	customers  int
	genWorkers int
	redacts    int
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/cgp", "path of the cgp binary (make build)")
	flag.StringVar(&o.data, "data", "", "data directory: reused when already generated, else generated into (required)")
	flag.IntVar(&o.customers, "customers", 1_000_000, "customers of the generated shop")
	flag.IntVar(&o.genWorkers, "gen-workers", 32, "--workers of cgp dev generate")
	flag.IntVar(&o.redacts, "redacts", 30, "customers recorded and erased, one after the other")
	flag.Parse()
	if o.data == "" {
		fmt.Fprintln(os.Stderr, "erasure: -data is required")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "erasure:", err)
		os.Exit(1)
	}
}

const manifestName = "erasure-bench.json"

type shop struct {
	ShopID, Domain, Secret, Token string
	Customers                     int
	Position                      uint64
	GenSeconds                    float64
}

func prepare(o options) (shop, error) {
	path := filepath.Join(o.data, manifestName)
	if raw, err := os.ReadFile(path); err == nil {
		var sh shop
		if err := json.Unmarshal(raw, &sh); err != nil {
			return shop{}, err
		}
		if sh.Customers != o.customers {
			return shop{}, fmt.Errorf("%s holds %d customers, not %d", o.data, sh.Customers, o.customers)
		}
		return sh, nil
	}
	if err := os.MkdirAll(o.data, 0o700); err != nil {
		return shop{}, err
	}
	tn, err := benchkit.NewTenant(o.bin, o.data, "Bench", "erase-bench.example.com", "bench-secret-0123456789abcdef", "enterprise")
	if err != nil {
		return shop{}, err
	}
	token, err := tn.Token(o.bin, o.data, "customers:read")
	if err != nil {
		return shop{}, err
	}
	fmt.Printf("generating %d customers in %s …\n", o.customers, o.data)
	out, err := benchkit.CLI(o.bin, o.data, "dev", "generate", "--shop", tn.ShopID, "--customers", strconv.Itoa(o.customers),
		"--orders", "0", "--workers", strconv.Itoa(o.genWorkers))
	if err != nil {
		return shop{}, err
	}
	pos, _ := out["position"].(float64)
	secs, _ := out["seconds"].(float64)
	sh := shop{ShopID: tn.ShopID, Domain: tn.Domain, Secret: tn.Secret, Token: token, Customers: o.customers,
		Position: uint64(pos), GenSeconds: secs}
	raw, _ := json.Marshal(sh)
	return sh, os.WriteFile(path, raw, 0o600)
}

// completions hands each "customer erasure complete" log line's customer
// id to whoever waits for it.
type completions struct {
	mu      sync.Mutex
	waiting map[string]chan time.Time
	errors  []string // message and error of the server's error lines
}

func (c *completions) expect(id string) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiting[id] = ch
	return ch
}

func (c *completions) line(b []byte) {
	var m struct {
		Level, Message, Error string
		CustomerID            string `json:"customer_id"`
	}
	if json.Unmarshal(b, &m) != nil {
		return
	}
	if m.Level == "error" {
		c.mu.Lock()
		c.errors = append(c.errors, m.Message+": "+m.Error)
		c.mu.Unlock()
	}
	if m.Message != "customer erasure complete" {
		return
	}
	c.mu.Lock()
	ch := c.waiting[m.CustomerID]
	delete(c.waiting, m.CustomerID)
	c.mu.Unlock()
	if ch != nil {
		ch <- time.Now()
	}
}

func run(o options) error {
	sh, err := prepare(o)
	if err != nil {
		return err
	}
	fmt.Printf("shop %s: %d customers, position %d (generated in %.0f s)\n", sh.ShopID, sh.Customers, sh.Position, sh.GenSeconds)
	done := &completions{waiting: map[string]chan time.Time{}}
	srv, err := benchkit.StartWatching(o.bin, o.data, done.line)
	if err != nil {
		return err
	}
	defer srv.Stop()
	client := benchkit.Client(8, 5*time.Minute)
	t0 := time.Now()
	if err := waitFor(client, srv.Base, sh, sh.Position, 6*time.Hour); err != nil {
		return err
	}
	// Every projector, not only the customers one: the clean-up waits for
	// all of them, so a projector still folding the log would be measured.
	if err := srv.WaitProjections(client, 1000, 6*time.Hour); err != nil {
		fmt.Println("warning:", err, "(measuring anyway)")
	}
	fmt.Printf("read models caught up in %.0f s\n", time.Since(t0).Seconds())

	var acks, pipes benchkit.Durations
	for i := range o.redacts {
		ext := 990000000 + i
		cus := fmt.Sprintf(`{"id":%d,"email":"erase-%d@bench.example","first_name":"Erase%d","last_name":"Bench","phone":"+1555088%04d",
"created_at":"2026-01-01T10:00:00Z","updated_at":"2026-01-01T10:00:00Z","state":"enabled","currency":"USD","orders_count":0,"total_spent":"0.00"}`, ext, i, i, i)
		st, hdr, err := deliver(client, srv.Base, sh, "customers/create", fmt.Sprintf("bench-c-%d-%d", ext, t0.UnixNano()), []byte(cus))
		if err != nil || st != http.StatusOK {
			return fmt.Errorf("customers/create: %d %v", st, err)
		}
		pos, _ := strconv.ParseUint(hdr.Get("X-Event-Position"), 10, 64)
		if err := waitFor(client, srv.Base, sh, pos, time.Minute); err != nil {
			return err
		}
		body := fmt.Sprintf(`{"shop_id":1,"shop_domain":%q,"customer":{"id":%d,"email":"erase-%d@bench.example","phone":"+1555088%04d"},"orders_to_redact":[]}`,
			sh.Domain, ext, i, i)
		id := domain.CustomerIDFromExternal(sh.ShopID, strconv.Itoa(ext))
		wait := done.expect(id)
		start := time.Now()
		st, _, err = deliver(client, srv.Base, sh, "customers/redact", fmt.Sprintf("bench-r-%d-%d", ext, t0.UnixNano()), []byte(body))
		ack := time.Since(start)
		if err != nil || st != http.StatusOK {
			return fmt.Errorf("customers/redact: %d %v", st, err)
		}
		select {
		case at := <-wait:
			acks, pipes = append(acks, ack), append(pipes, at.Sub(start))
			if d := at.Sub(start); d > time.Second {
				fmt.Printf("  redact %d: pipeline %.0f ms, %.0f s after the server started\n", i+1, benchkit.Ms(d), time.Since(t0).Seconds())
			}
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("the erasure of %s did not complete within 2 minutes", id)
		}
	}
	fmt.Printf("\n%d customers/redact on a shop of %d customers:\n", o.redacts, sh.Customers)
	fmt.Printf("  acknowledged: p50 %.1f ms, p99 %.1f ms, max %.1f ms (target < 100 ms)\n",
		benchkit.Ms(acks.P(50)), benchkit.Ms(acks.P(99)), benchkit.Ms(acks.Max()))
	fmt.Printf("  pipeline complete: p50 %.0f ms, p99 %.0f ms, max %.0f ms (target < 5 s)\n",
		benchkit.Ms(pipes.P(50)), benchkit.Ms(pipes.P(99)), benchkit.Ms(pipes.Max()))
	done.mu.Lock()
	defer done.mu.Unlock()
	for _, e := range done.errors {
		fmt.Println("server error:", e)
	}
	return nil
}

// waitFor waits until the customers read model reached pos.
func waitFor(client *http.Client, base string, sh shop, pos uint64, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/customers?limit=1", nil)
		req.Header.Set("Authorization", "Bearer "+sh.Token)
		req.Header.Set("X-Wait-For-Position", strconv.FormatUint(pos, 10))
		resp, err := client.Do(req)
		st := 0
		if err == nil {
			st = resp.StatusCode
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if st == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("customers read model did not reach %d: %d %v", pos, st, err)
		}
		if st != http.StatusServiceUnavailable && st != http.StatusGatewayTimeout {
			time.Sleep(time.Second) // an unexpected answer: do not spin
		}
	}
}

func deliver(client *http.Client, base string, sh shop, topic, id string, body []byte) (int, http.Header, error) {
	d := benchkit.NewDelivery(sh.Secret, id, topic, body)
	// customers/redact is destructive: the receiver needs a recent
	// triggered-at (ingest.TriggeredAtWindow).
	d.TriggeredAt = time.Now().UTC().Format(time.RFC3339)
	req, err := d.Request(context.Background(), base+"/webhooks/events", sh.Domain)
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header, nil
}
