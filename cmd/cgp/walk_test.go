package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

// TestCustomerWalkWhileCustomersArrive walks 10,000 customers at 100 a
// page, in both orders of created_at, while new customers keep arriving
// between pages (some created before the walk's position, some after):
// every customer that existed when the walk began is served exactly once.
func TestCustomerWalkWhileCustomersArrive(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "walk.example.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	// A second writer on the same data directory, as the CLI would be.
	core, err := OpenCore(context.Background(), testConfig(dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { core.Close() })
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	record := func(ext int, created time.Time) uint64 {
		res, err := core.Commands.RecordCustomer(context.Background(), commands.RecordCustomer{ShopID: tn.shopID,
			Profile: domain.CustomerProfile{ExternalID: strconv.Itoa(ext), PlatformCreated: created, PlatformUpdated: created}},
			commands.Meta{Actor: "test", Source: "cli"})
		if err != nil {
			t.Error(err)
		}
		return res.Position
	}

	const n = 10_000
	var wg sync.WaitGroup
	var mu sync.Mutex
	var last uint64
	work := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				// Several customers share each second: ties cross pages.
				p := record(i, base.Add(time.Duration(i/3)*time.Second))
				mu.Lock()
				last = max(last, p)
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		return
	}

	arriving := n
	for _, order := range []string{"created_at", "-created_at"} {
		seen := make(map[string]int, n)
		next := "/api/v1/customers?limit=100&sort=" + order
		wait := strconv.FormatUint(last, 10)
		for pages := 0; next != ""; pages++ {
			if pages > n/100+200 {
				t.Fatalf("walk %s does not end", order)
			}
			r := s.get(t, next, tn.token, "X-Wait-For-Position", wait)
			if r.status != 200 {
				t.Fatalf("GET %s: %d %s", next, r.status, r.body)
			}
			doc := r.json(t)
			for _, d := range doc["data"].([]any) {
				seen[d.(map[string]any)["id"].(string)]++
			}
			// Between pages: one customer older than anything, one in
			// the middle, one newer than anything.
			for _, created := range []time.Time{base.Add(-time.Hour), base.Add(time.Duration(n/6) * time.Second), base.Add(1000 * time.Hour)} {
				record(arriving, created) // visible to a later page or not: either is right
				arriving++
			}
			next = ""
			if pg := doc["pagination"].(map[string]any); pg["has_next"] == true {
				next = "/api/v1/customers?limit=100&sort=" + order + "&cursor=" + url.QueryEscape(pg["next_cursor"].(string))
			}
		}
		for i := range n {
			id := domain.CustomerIDFromExternal(tn.shopID, strconv.Itoa(i))
			if c := seen[id]; c != 1 {
				t.Fatalf("walk %s: pre-existing customer %d served %d times", order, i, c)
			}
		}
		for id, c := range seen {
			if c != 1 {
				t.Fatalf("walk %s: customer %s served %d times", order, id, c)
			}
		}
		t.Logf("walk %s: %d customers served, %s", order, len(seen), fmt.Sprint(arriving-n, " arrived during the walks"))
	}
}
