package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/eventlog"
	logsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestReadyzFollowsTheLogsWriteHealth (point 14 of issue 14): when the
// event log cannot grow (SQLite's max_page_count limit, a real engine
// limit that fails writes with SQLITE_FULL as a full disk does), webhooks
// are answered 503 and /readyz reports not ready, naming
// event_log_writes, so a load balancer moves traffic away; once the log
// may grow again /readyz is ready and webhooks are taken.
func TestReadyzFollowsTheLogsWriteHealth(t *testing.T) {
	dir := t.TempDir()
	var events atomic.Pointer[logsqlite.Log]
	s := startServerWith(t, dir, func(c *Config) {
		c.Test.OnEventLog = func(l eventlog.Log) {
			if sl, ok := l.(*logsqlite.Log); ok {
				events.Store(sl)
			}
		}
	})
	v := openapitest.NewValidator(t)
	readyz := func() response {
		r := s.get(t, "/readyz", "")
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	tn := newTenant(t, dir, "readyz.example.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	if r := readyz(); r.status != http.StatusOK {
		t.Fatalf("/readyz before: %d %s", r.status, r.body)
	}
	log := events.Load()
	if log == nil {
		t.Fatal("the server's event log is not the SQLite adapter")
	}
	log.SetMaxPages(1) // no page may be added to events.db from now on
	full := false
	for i := 0; i < 500 && !full; i++ {
		email := fmt.Sprintf("full%d-%s@example.com", i, strings.Repeat("x", 1500))
		r := s.webhook(t, tn, shopify.TopicCustomersCreate, fmt.Sprintf("dlv-full-%d", i),
			customerPayload(int64(9100000+i), email, 0, "0.00", "2026-03-01T10:00:00-05:00"))
		switch r.status {
		case http.StatusOK:
		case http.StatusServiceUnavailable:
			full = true
			if r.errorCode(t) != "unavailable" || r.header.Get("Retry-After") == "" {
				t.Errorf("webhook into a full log: %d %s %v", r.status, r.body, r.header)
			}
		default:
			t.Fatalf("webhook %d: %d %s", i, r.status, r.body)
		}
	}
	if !full {
		t.Fatal("the capped log took 500 webhooks")
	}
	r := readyz()
	if r.status != http.StatusServiceUnavailable || r.errorCode(t) != "unavailable" ||
		!strings.Contains(string(r.body), "event_log_writes") {
		t.Fatalf("/readyz while the log is full: %d %s", r.status, r.body)
	}
	if r := readyz(); r.status != http.StatusServiceUnavailable { // the probe write fails too
		t.Fatalf("/readyz probed again while full: %d %s", r.status, r.body)
	}
	log.SetMaxPages(0) // space again
	eventually(t, 30*time.Second, "/readyz is ready again", func() bool { return readyz().status == http.StatusOK })
	if r := s.webhook(t, tn, shopify.TopicCustomersCreate, "dlv-after-full",
		customerPayload(9199999, "after@example.com", 0, "0.00", "2026-03-01T10:00:00-05:00")); r.status != http.StatusOK {
		t.Fatalf("webhook after recovery: %d %s", r.status, r.body)
	}
}
