package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
	"github.com/cgp-platform/cgp/domain"
)

// firstCustomer is the platform's id of the first generated customer.
const firstCustomer = 7_100_000_000_000

// sender posts customers/create deliveries of one shop, customer after
// customer, to its servers in turn.
type sender struct {
	client *http.Client
	urls   []string // each server's webhook receiver
	tenant benchkit.Tenant
	tag    string // makes the webhook ids of a run its own
	next   atomic.Int64
}

// post sends the next customer's delivery to the next server and returns
// the answer's status (0 for a transport error), the acknowledgement
// latency and the customer's stream.
func (s *sender) post(ctx context.Context) (status int, lat time.Duration, stream string) {
	i := s.next.Add(1) - 1
	ext := strconv.FormatInt(firstCustomer+i, 10)
	d := benchkit.NewDelivery(s.tenant.Secret, "scale-"+s.tag+"-"+ext, "customers/create", customerBody(ext, i))
	stream = domain.CustomerStream(domain.CustomerIDFromExternal(s.tenant.ShopID, ext))
	req, err := d.Request(ctx, s.urls[int(i)%len(s.urls)], s.tenant.Domain)
	if err != nil {
		return 0, 0, stream
	}
	t0 := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, time.Since(t0), stream
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, time.Since(t0), stream
}

// customerBody is a customers/create payload in the platform's shape.
func customerBody(ext string, i int64) []byte {
	return fmt.Appendf(nil, `{"id":%s,"email":"scale%d@example.com","first_name":"Scale","last_name":"Customer","orders_count":1,"state":"enabled","total_spent":"12.50","tags":"bench","currency":"USD","created_at":"2026-10-01T10:00:00Z","updated_at":"2026-10-01T10:00:00Z","email_marketing_consent":{"state":"subscribed"}}`, ext, i)
}

// phase is what a closed loop measured.
type phase struct {
	elapsed  time.Duration      // from the start until the last answer
	acked    int                // 2xx answers
	failed   int                // other answers and transport errors
	statuses map[int]int        // of the failures; 0: transport error
	lat      benchkit.Durations // of the 2xx answers
	streams  []string           // of the acknowledged deliveries
}

// rate is the acknowledged deliveries per second.
func (p phase) rate() float64 { return float64(p.acked) / p.elapsed.Seconds() }

// closedLoop runs senders goroutines, each posting a delivery as soon as
// the previous one is answered, until d has passed (or ctx ends); the
// posts under way then are awaited and counted.
func closedLoop(ctx context.Context, s *sender, senders int, d time.Duration) phase {
	start := time.Now()
	deadline := start.Add(d)
	var mu sync.Mutex
	p := phase{statuses: map[int]int{}}
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		// Exits at the deadline or when ctx ends.
		go func() {
			defer wg.Done()
			var mine phase
			mine.statuses = map[int]int{}
			for ctx.Err() == nil && time.Now().Before(deadline) {
				status, lat, stream := s.post(ctx)
				if status >= 200 && status < 300 {
					mine.acked++
					mine.lat = append(mine.lat, lat)
					mine.streams = append(mine.streams, stream)
					continue
				}
				mine.failed++
				mine.statuses[status]++
			}
			mu.Lock()
			defer mu.Unlock()
			p.acked += mine.acked
			p.failed += mine.failed
			p.lat = append(p.lat, mine.lat...)
			p.streams = append(p.streams, mine.streams...)
			for k, v := range mine.statuses {
				p.statuses[k] += v
			}
		}()
	}
	wg.Wait()
	p.elapsed = time.Since(start)
	return p
}
