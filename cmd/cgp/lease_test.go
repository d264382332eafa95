package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/smtptest"
	leasepostgres "github.com/cgp-platform/cgp/lease/postgres"
	"github.com/cgp-platform/cgp/notify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// leaseDSN is the test server of the PostgreSQL leases (up on every
// development and CI machine: the test never skips).
func leaseDSN() string {
	if s := os.Getenv("CGP_TEST_POSTGRES_URL"); s != "" {
		return s
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// With --lease-postgres-url the side-effect jobs of cgp serve run under
// their PostgreSQL leases: while another holder (a second server, played by
// the test) has job/webhook_delivery, this server delivers no webhook,
// its other side-effect jobs run; once the lease is given back the server
// takes it and delivers; at shutdown it gives its leases back.
func TestServeRunsSideEffectJobsUnderPostgresLeases(t *testing.T) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	ns := t.Name() + "/" + hex.EncodeToString(b)
	other, err := leasepostgres.New(leasepostgres.Config{DSN: leaseDSN(), Namespace: ns, Poll: 20 * time.Millisecond,
		Check: 50 * time.Millisecond, Settle: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	held, release, otherDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		otherDone <- other.Run(context.Background(), app.JobLease("webhook_delivery"), func(ctx context.Context) error {
			close(held)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	}()
	select {
	case <-held:
	case <-time.After(minEventually):
		t.Fatal("the other holder did not take the lease")
	}

	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) {
		fastWebhooks(c)
		c.LeasePostgresURL, c.LeaseNamespace = leaseDSN(), ns
		c.Test.Lease = app.LeaseHooks{Poll: 20 * time.Millisecond, Check: 50 * time.Millisecond, Settle: time.Millisecond}
	})
	tn := newTenant(t, dir, "wh-lease.example.com", "agency", "webhooks:read,webhooks:write")
	rc := newReceiver(t, nil)
	subscribe(t, dir, tn, rc.srv.URL+"/hooks", "customer.created")
	waitForToken(t, s, tn)
	pos := postCustomers(t, s, tn, 1, 3)
	if r := s.get(t, "/api/v1/webhook-subscriptions", tn.token, "X-Wait-For-Position", pos); r.status != http.StatusOK {
		t.Fatalf("subscriptions: %d %s", r.status, r.body)
	}
	taken := func(job string) bool {
		for _, line := range strings.Split(s.logs.String(), "\n") {
			if strings.Contains(line, `"lease":"`+app.JobLease(job)+`"`) && strings.Contains(line, "lease taken") {
				return true
			}
		}
		return false
	}
	holds := func(job string) string {
		for _, line := range strings.Split(string(s.get(t, "/metrics", "").body), "\n") {
			if v, ok := strings.CutPrefix(line, `cgp_lease_held{job="`+job+`"} `); ok {
				return v
			}
		}
		return "absent"
	}
	eventually(t, minEventually, "the server holds its other side-effect jobs' leases", func() bool {
		return taken("message_sending") && taken("notifications") && taken("data_exports") && holds("message_sending") == "1"
	})
	if taken("webhook_delivery") || len(rc.requests()) != 0 || holds("webhook_delivery") != "0" {
		t.Fatalf("the server ran webhook_delivery while another holder had the lease: %d requests, cgp_lease_held %s",
			len(rc.requests()), holds("webhook_delivery"))
	}

	close(release)
	if err := <-otherDone; err != nil {
		t.Fatalf("the other holder: %v", err)
	}
	eventually(t, minEventually, "three deliveries once the server has the lease", func() bool { return rc.distinct() >= 3 })
	if !taken("webhook_delivery") || holds("webhook_delivery") != "1" {
		t.Errorf("the server delivered without logging its lease or showing it held (%s)", holds("webhook_delivery"))
	}

	// Shutdown gives the leases back: another holder takes one at once.
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), minEventually)
	defer cancel()
	if err := other.Run(ctx, app.JobLease("message_sending"), func(context.Context) error { return nil }); err != nil {
		t.Fatalf("the lease of message_sending after the server stopped: %v", err)
	}
}

// When the server's lease connection dies while a webhook is being
// delivered, the delivery job stops (the attempt is cancelled, not
// recorded) and, once the server has the lease again, runs anew from where
// it was: the delivery is made again and succeeds.
func TestWebhookDeliveryGoesOnAfterTheServerLostItsLease(t *testing.T) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	ns := t.Name() + "/" + hex.EncodeToString(b)
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) {
		fastWebhooks(c)
		c.Test.OutboundWebhooks.Timeout = 10 * time.Minute // the first attempt ends only with the lease
		c.LeasePostgresURL, c.LeaseNamespace = leaseDSN(), ns
		c.Test.Lease = app.LeaseHooks{Poll: 20 * time.Millisecond, Check: 50 * time.Millisecond, Settle: time.Millisecond}
	})
	hung, gone := make(chan struct{}, 1), make(chan struct{})
	defer close(gone)
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			hung <- struct{}{}
			select { // until the server gives the attempt up
			case <-r.Context().Done():
			case <-gone:
			}
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	tn := newTenant(t, dir, "wh-lease-lost.example.com", "agency", "webhooks:read,webhooks:write")
	sub, _ := subscribe(t, dir, tn, rc.srv.URL+"/hooks", "customer.created")
	waitForToken(t, s, tn)
	postCustomers(t, s, tn, 1, 1)
	select {
	case <-hung:
	case <-time.After(minEventually):
		t.Fatal("the delivery was not attempted")
	}

	terminateLease(t, leasepostgres.Key(ns, app.JobLease("webhook_delivery")))
	eventually(t, minEventually, "the delivery is made again once the server has the lease again", func() bool {
		return len(rc.requests()) >= 2
	})
	// The receiver answered; the outcome is recorded just after.
	eventually(t, minEventually, "the delivery recorded as succeeded", func() bool {
		return len(deliveries(t, s, nil, tn.token, sub, "&filter[state]=succeeded")) == 1
	})
	if got := rc.requests(); len(got) != 2 || got[0].id != got[1].id {
		t.Fatalf("%d requests, want the event twice (the attempt given up, then the one answered)", len(got))
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "lease lost") || strings.Contains(logs, "background job failed") {
		t.Fatalf("want the loss logged and no job failed; logs:\n%s", logs)
	}
}

// terminateLease ends the PostgreSQL session holding the advisory lock of
// key, as a broken connection would.
func terminateLease(t *testing.T, key int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), minEventually)
	defer cancel()
	conn, err := pgx.Connect(ctx, leaseDSN())
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND objsubid = 1
		  AND classid = (($1::bigint >> 32) & 4294967295)::oid AND objid = ($1::bigint & 4294967295)::oid`, key).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("terminate the lease holder: %d sessions, %v", n, err)
	}
}

// A server that takes the notifier over from another (here: the same data
// directory restarted without notify.db, as a server that never ran the
// notifier has none) sends nothing the other sent: its reactor folds the
// sends the log records (NotificationsSent) before its dispatcher starts,
// and queues the P1's reminder as the other did.
func TestANotifierTakenOverSendsNothingAgain(t *testing.T) {
	relay, err := smtptest.Start(smtptest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Close() })
	var notifier atomic.Pointer[notify.Service]
	mod := func(c *Config) {
		c.SMTPAddr, c.SMTPFrom = relay.Addr, "alerts@shop.example.com"
		c.OutboundAllowPrivate = true
		c.Test.Notify.Opened = func(n *notify.Service) { notifier.Store(n) }
	}
	dir := t.TempDir()
	s := startServerWith(t, dir, mod)
	v := openapitest.NewValidator(t)
	rm := messagingDB(t, dir)
	wt := connectWhatsApp(t, s, rm, "takeover-notify.example.com", "agency", "7003")
	settings := `{"data":{"attributes":{"notifications":{"emails":["ops@takeover-notify.example.com"]}}}}`
	catalogClient{t: t, s: s, v: v, token: wt.token}.ok(200, http.MethodPatch, "/api/v1/shop", settings)
	if r := waPost(t, s, nil, wt.appSecret, waFixture(t, "template_paused", wt.waba)); r.status != http.StatusOK {
		t.Fatalf("template_paused: %d %s", r.status, r.body)
	}
	emails := func() (sent, reminders string) {
		t.Helper()
		rows, err := notifier.Load().Store.DB().Query(`SELECT reminder, state, attempts FROM ntf_outbox WHERE channel = 'email' ORDER BY reminder`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var reminder, attempts int
			var state string
			if err := rows.Scan(&reminder, &state, &attempts); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d:%s:%d", reminder, state, attempts))
		}
		if len(out) == 0 {
			return "", ""
		}
		return out[0], strings.Join(out[1:], ",")
	}
	eventually(t, minEventually, "the P1 e-mail sent and marked", func() bool {
		sent, _ := emails()
		return relay.Count() == 1 && strings.HasPrefix(sent, "0:done:")
	})
	_, reminders := emails()
	s.stop()

	for _, f := range []string{"notify.db", "notify.db-wal", "notify.db-shm"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	s = startServerWith(t, dir, mod)
	r := catalogClient{t: t, s: s, v: v, token: wt.token}.ok(200, http.MethodPatch, "/api/v1/shop", settings)
	pos, err := strconv.ParseUint(r.position(t), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), minEventually)
	defer cancel()
	if err := notifier.Load().WaitFor(ctx, eventlog.Position(pos)); err != nil {
		t.Fatal(err)
	}
	sent, again := emails()
	if sent != "0:done:0" || again != reminders || reminders == "" || relay.Count() != 1 {
		t.Fatalf("after the takeover: the e-mail %q (want 0:done:0), reminders %q (want %q), %d e-mails (want 1)", sent, again, reminders,
			relay.Count())
	}
}
