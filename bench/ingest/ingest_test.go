package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/ingest"
	"github.com/cgp-platform/cgp/ingest/shopify"
)

func testGenerator() generator {
	return generator{secret: secret, customers: 50, seed: 7, epoch: time.Date(2026, 3, 9, 9, 0, 0, 0, time.UTC)}
}

// The deliveries are signed 2 KB orders the receiver's parser reads, each
// with its own order and webhook id, their customers drawn from the pool.
func TestDeliveriesAreSignedOrders(t *testing.T) {
	g := testGenerator()
	ds := g.deliveries(0, 300)
	orders, hooks, customers := map[string]bool{}, map[string]bool{}, map[string]int{}
	for i, d := range ds {
		if len(d.Body) != payloadSize {
			t.Fatalf("delivery %d: body of %d bytes, want %d", i, len(d.Body), payloadSize)
		}
		if !ingest.VerifyCommerce([]byte(secret), d.Body, d.Signature) {
			t.Fatalf("delivery %d: signature does not verify", i)
		}
		if d.Topic != topic || ingest.ParseTime(d.TriggeredAt).IsZero() {
			t.Fatalf("delivery %d: topic %q, triggered at %q", i, d.Topic, d.TriggeredAt)
		}
		if _, err := shopify.CheckShape(d.Topic, d.Body); err != nil {
			t.Fatalf("delivery %d: not the shape of %s: %v", i, d.Topic, err)
		}
		o, err := shopify.ParseOrder(d.Body)
		if err != nil {
			t.Fatalf("delivery %d: %v\n%s", i, err, d.Body)
		}
		if o.CustomerID == "" || len(o.LineItems) == 0 || o.UTM.Source == "" || o.TotalPrice <= 0 {
			t.Fatalf("delivery %d: parsed %+v", i, o)
		}
		if orders[o.ID] || hooks[d.ID] {
			t.Fatalf("delivery %d: order %s or webhook id %s repeated", i, o.ID, d.ID)
		}
		orders[o.ID], hooks[d.ID] = true, true
		customers[o.CustomerID]++
	}
	if len(customers) > g.customers || len(customers) == len(ds) {
		t.Fatalf("%d customers for %d orders from a pool of %d", len(customers), len(ds), g.customers)
	}
	again := g.delivery(17)
	if !bytes.Equal(again.Body, ds[17].Body) || again.ID != ds[17].ID {
		t.Fatal("the same seed made another delivery")
	}
}

func TestBareHandlerVerifiesTheSignature(t *testing.T) {
	srv := httptest.NewServer(bareHandler([]byte(secret)))
	defer srv.Close()
	d := testGenerator().delivery(1)
	tg := target{url: srv.URL, domain: shopDomain}
	if s := post(context.Background(), srv.Client(), tg, d); s != http.StatusOK {
		t.Fatalf("signed delivery: status %d", s)
	}
	d.Body = append(bytes.Clone(d.Body[:len(d.Body)-1]), ' ')
	if s := post(context.Background(), srv.Client(), tg, d); s != http.StatusUnauthorized {
		t.Fatalf("tampered delivery: status %d", s)
	}
}

// A delivery queued behind a slow answer counts the wait: its latency runs
// from its due time, not from when a worker got to send it.
func TestOpenLoopCountsFromDueTime(t *testing.T) {
	release := make(chan struct{})
	var first, once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	defer open()
	// The first delivery is answered 100 ms after it arrived, when the last
	// one (10 at 100/s, due at 90 ms) is due; the clock starts at its
	// arrival, not at the test's start, so a slow start of the loop on a
	// loaded machine cannot release it early.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		first.Do(func() {
			timer := time.AfterFunc(100*time.Millisecond, open)
			defer timer.Stop()
			<-release
		})
	}))
	defer srv.Close()
	r := openLoop(benchkit.Client(1, 10*time.Second), target{url: srv.URL}, testGenerator().deliveries(0, 10), 100, 1)
	if r.ok != 10 {
		t.Fatalf("%d of 10 acknowledged: %+v", r.ok, r)
	}
	// Due at 0, 10, …, 90 ms, all answered at 100 ms or later: the first
	// waited at least 100 ms, and those queued behind it count from their
	// due times (lower bounds only: a loaded machine only adds).
	if r.lat.Max() < 90*time.Millisecond || r.lat.P(50) < 30*time.Millisecond {
		t.Fatalf("latencies %v: the waits behind the first delivery are not counted", r.lat)
	}
}

// The closed loop on cgp sends every delivery once at most.
func TestClosedLoopSendsEachDeliveryOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen[r.Header.Get(ingest.HeaderWebhookID)]++
		mu.Unlock()
	}))
	defer srv.Close()
	ds := testGenerator().deliveries(0, 50)
	r := closedLoop(benchkit.Client(4, 10*time.Second), target{url: srv.URL}, ds, 4, time.Minute, false)
	if !r.exhausted || r.ok != len(ds) || len(seen) != len(ds) {
		t.Fatalf("exhausted %v, %d acknowledged, %d distinct of %d", r.exhausted, r.ok, len(seen), len(ds))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("webhook %s sent %d times", id, n)
		}
	}
}

func TestDupPlan(t *testing.T) {
	unique, plan := dupPlan(2000, 0.30, 1)
	if unique != 1400 || len(plan) != 2000 {
		t.Fatalf("unique %d, posts %d; want 1400 and 2000", unique, len(plan))
	}
	copies := make([]int, unique)
	inOrder := true
	for k, i := range plan {
		copies[i]++
		inOrder = inOrder && (k >= unique || i == k)
	}
	several := 0
	for i, n := range copies {
		if n == 0 {
			t.Fatalf("delivery %d never posted", i)
		}
		if n >= 3 {
			several++
		}
	}
	if several == 0 || inOrder {
		t.Fatalf("%d deliveries posted three times or more, shuffled %v", several, !inOrder)
	}
}

// checkLog finds a missing delivery and counts one recorded per id, and the
// events a mapping derived from a delivery apart.
func TestCheckLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	log, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	const shop = "shop_bench"
	ds := testGenerator().deliveries(0, 6)
	appendEvent := func(id [16]byte, stream string, d benchkit.Delivery) {
		t.Helper()
		_, err := log.Append(ctx, stream, eventlog.Any(), eventlog.EventData{
			ID: id, Type: "WebhookDeliveryRecorded", SchemaVersion: 1, ShopID: shop, Data: []byte("{}"),
			Metadata: eventlog.Metadata{Actor: "webhook:" + d.ID, Source: "webhook"},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range ds[:5] {
		id := eventlog.DeterministicID("commerce", shop, d.ID)
		appendEvent(id, "delivery-"+id.String(), d)
	}
	appendEvent(eventlog.DeterministicID("derived", ds[0].ID), "order-1", ds[0])

	l, err := checkLog(path, shop, ds)
	if err != nil {
		t.Fatal(err)
	}
	if l.exactlyOnce() || l.once != 5 || l.missing != 1 || l.derived != 1 || l.byActor[0] != 2 || l.streams["delivery"] != 5 {
		t.Fatalf("with delivery 5 missing: %+v", l)
	}
	id := eventlog.DeterministicID("commerce", shop, ds[5].ID)
	appendEvent(id, "delivery-"+id.String(), ds[5])
	if l, err = checkLog(path, shop, ds); err != nil || !l.exactlyOnce() {
		t.Fatalf("all recorded: %+v, %v", l, err)
	}
}
