package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/projections/attribution"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// With --warehouse sqlite the server ships customers to the warehouse as
// they change, and goes on shipping after a replay switched its read models.
func TestWarehouseShipsCustomersAcrossAReplay(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) {
		c.Warehouse = app.WarehouseSQLite
		c.Test.VersionPoll = 20 * time.Millisecond
	})
	defer s.stop()
	tn := newTenant(t, dir, "warehouse.example.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	for i := range 5 {
		s.deliver(t, tn, "customers/create", fmt.Sprintf("wh-%d", i),
			customerPayload(int64(100+i), fmt.Sprintf("wh%d@warehouse.example.com", i), 0, "0.00", "2026-11-01T10:00:00-05:00"))
	}
	wh := openVersion(t, filepath.Join(dir, "warehouse.db"))
	shipped := func(email string) bool {
		var n int
		err := wh.QueryRow(`SELECT COUNT(*) FROM customers WHERE shop_id = ? AND email = ? AND _deleted = 0`, tn.shopID, email).Scan(&n)
		return err == nil && n == 1
	}
	eventually(t, 20*time.Second, "the customers shipped", func() bool {
		for i := range 5 {
			if !shipped(fmt.Sprintf("wh%d@warehouse.example.com", i)) {
				return false
			}
		}
		return true
	})

	replayCLI(t, dir)
	eventually(t, 15*time.Second, "the server switches", func() bool {
		return strings.Contains(s.logs.String(), "read models switched to the replayed version")
	})
	s.deliver(t, tn, "customers/create", "wh-after", customerPayload(200, "after@warehouse.example.com", 0, "0.00", "2026-11-01T10:00:00-05:00"))
	eventually(t, 20*time.Second, "a customer recorded after the switch shipped", func() bool { return shipped("after@warehouse.example.com") })
}

// brokenWarehouse fails every query, as an unreachable ClickHouse does.
type brokenWarehouse struct{}

func (brokenWarehouse) Query(context.Context, string, ...any) (attribution.WarehouseRows, error) {
	return nil, errors.New("dial tcp 127.0.0.1:9000: connection refused")
}

// When ClickHouse fails, the summary is answered from the read model and
// the failure logged; a bad request is not retried there.
func TestWarehouseSummaryFallsBackToTheReadModel(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "fallback.example.com", "agency", "attribution:read")
	waitForToken(t, s, tn)
	pos := s.deliver(t, tn, "orders/create", "fb-1", fixture(t, "orders/create"))
	waitProjected(t, readModels(t, dir), "attribution", pos)
	s.stop()

	store, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(dir, "readmodels.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	q := attribution.NewQueries(store.DB())
	var logs bytes.Buffer
	ws := app.WarehouseFallback{Primary: attribution.WarehouseSummary{W: brokenWarehouse{}}, Fallback: q, Log: zerolog.New(&logs)}
	want, err := q.Summary(context.Background(), tn.shopID, "linear", "channel", time.Time{}, time.Time{})
	if err != nil || len(want) == 0 {
		t.Fatalf("read model summary %v %v", want, err)
	}
	got, err := ws.Summary(context.Background(), tn.shopID, "linear", "channel", time.Time{}, time.Time{})
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("fallback %v %v, want %v", got, err, want)
	}
	if !strings.Contains(logs.String(), "answered from the read model") {
		t.Fatalf("no warning logged: %s", logs.String())
	}
	logs.Reset()
	if _, err := ws.Summary(context.Background(), tn.shopID, "linear", "nope", time.Time{}, time.Time{}); err == nil || logs.Len() != 0 {
		t.Fatalf("bad group: %v, logged %q", err, logs.String())
	}
}
