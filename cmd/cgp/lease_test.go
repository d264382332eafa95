package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/app"
	leasepostgres "github.com/cgp-platform/cgp/lease/postgres"
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
		c.LeasePostgresURL = leaseDSN()
		c.Test.Lease = app.LeaseHooks{Namespace: ns, Poll: 20 * time.Millisecond, Check: 50 * time.Millisecond, Settle: time.Millisecond}
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
	eventually(t, minEventually, "the server holds its other side-effect jobs' leases", func() bool {
		return taken("message_sending") && taken("notifications") && taken("data_exports")
	})
	if taken("webhook_delivery") || len(rc.requests()) != 0 {
		t.Fatalf("the server delivered webhooks while another holder had the lease: %d requests", len(rc.requests()))
	}

	close(release)
	if err := <-otherDone; err != nil {
		t.Fatalf("the other holder: %v", err)
	}
	eventually(t, minEventually, "three deliveries once the server has the lease", func() bool { return rc.distinct() >= 3 })
	if !taken("webhook_delivery") {
		t.Error("the server delivered without logging its lease")
	}

	// Shutdown gives the leases back: another holder takes one at once.
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), minEventually)
	defer cancel()
	if err := other.Run(ctx, app.JobLease("message_sending"), func(context.Context) error { return nil }); err != nil {
		t.Fatalf("the lease of message_sending after the server stopped: %v", err)
	}
}
