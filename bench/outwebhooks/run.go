package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/bench/internal/benchkit"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	logsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/vault"
	vaultsqlite "github.com/cgp-platform/cgp/vault/sqlite"
)

// baselineSecret signs the bare loop's posts.
var baselineSecret = []byte("whsec_bench-baseline-0123456789abcdef")

// env is one server on a fresh data directory, with its tenant and a core
// of the bench process on the same data directory (the SQLite event log
// is shared between processes) that creates the subscriptions.
type env struct {
	dir    string
	srv    *benchkit.Server
	tenant benchkit.Tenant
	core   *app.Core
	client *http.Client
	posted atomic.Int64 // commerce webhooks posted, for unique ids
}

func openEnv(bin string) (*env, error) {
	dir, err := os.MkdirTemp("", "cgp-bench-outwh-")
	if err != nil {
		return nil, err
	}
	e := &env{dir: dir, client: benchkit.Client(512, 30*time.Second)}
	if e.tenant, err = benchkit.NewTenant(bin, dir, "Bench", "bench.example.com", "bench-secret-0123456789abcdef", "agency"); err != nil {
		e.close()
		return nil, err
	}
	var onLine func([]byte)
	if os.Getenv("OUTWEBHOOKS_SERVER_LOG") != "" {
		onLine = func(l []byte) { fmt.Fprintf(os.Stderr, "server: %s\n", l) }
	}
	if e.srv, err = benchkit.StartWatching(bin, dir, onLine, serveArgs...); err != nil {
		e.close()
		return nil, err
	}
	cfg := app.Config{DataDir: dir, LogLevel: "error", EventLog: "sqlite", Vault: "sqlite"}
	if e.core, err = app.OpenCore(context.Background(), cfg, zerolog.Nop(), adapters); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	if e.core != nil {
		e.core.Close()
	}
	if e.srv != nil {
		if err := e.srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "outwebhooks: stop server:", err)
		}
	}
	os.RemoveAll(e.dir)
}

// adapters are the embedded stores (the server runs on the defaults).
var adapters = app.Adapters{
	EventLog: func(_ context.Context, cfg app.Config) (eventlog.Log, error) {
		return logsqlite.Open(logsqlite.Config{Path: cfg.Path("events.db")})
	},
	Vault: func(_ context.Context, cfg app.Config, master []byte) (vault.Vault, error) {
		return vaultsqlite.Open(vaultsqlite.Config{Path: cfg.Path("vault.db"), MasterKey: master})
	},
}

var meta = commands.Meta{Actor: "bench", Source: "cli"}

// subscribe creates a subscription of the tenant's shop to customer.created
// at url and returns its id and secret.
func (e *env) subscribe(url string) (string, string, error) {
	res, err := e.core.Commands.CreateWebhookSubscription(context.Background(), commands.CreateWebhookSubscription{
		ShopID: e.tenant.ShopID, URL: url, EventTypes: []string{"customer.created"}, AllowPrivate: true}, meta)
	if err != nil {
		return "", "", fmt.Errorf("create subscription: %w", err)
	}
	return res.ID, res.Secret, nil
}

func (e *env) setEnabled(id string, on bool) error {
	_, err := e.core.Commands.UpdateWebhookSubscription(context.Background(), commands.UpdateWebhookSubscription{
		ShopID: e.tenant.ShopID, SubscriptionID: id, Patch: domain.WebhookPatch{Enabled: &on}}, meta)
	return err
}

// post sends one signed customers/create (a new customer) and reports
// whether it was acknowledged.
func (e *env) post(ctx context.Context) error {
	i := e.posted.Add(1)
	ext := fmt.Sprint(1_000_000 + i)
	body := []byte(fmt.Sprintf(`{"id":%s,"email":"bench%d@example.com","first_name":"Bench","last_name":"Customer","orders_count":1,"state":"enabled","total_spent":"12.50","tags":"bench","currency":"USD","created_at":"2026-10-01T10:00:00Z","updated_at":"2026-10-01T10:00:00Z","email_marketing_consent":{"state":"subscribed"}}`, ext, i))
	req, err := benchkit.NewDelivery(e.tenant.Secret, "outwh-"+ext, "customers/create", body).Request(ctx, e.srv.Base+benchkit.EventsPath, e.tenant.Domain)
	if err != nil {
		return err
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("webhook status %d", resp.StatusCode)
	}
	return nil
}

// postMany sends n webhooks as fast as 32 senders go; it returns how many
// were acknowledged.
func (e *env) postMany(n int) int {
	var next, ok atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if e.post(context.Background()) == nil {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return int(ok.Load())
}

// store opens the server's delivery store read-only.
func (e *env) store() (*sql.DB, error) {
	return sql.Open("sqlite3", "file:"+filepath.Join(e.dir, app.WebhooksFile)+"?mode=ro&_busy_timeout=10000")
}

func count(db *sql.DB, q string, args ...any) (int, error) {
	var n int
	err := db.QueryRow(q, args...).Scan(&n)
	return n, err
}

// live is one live run's figures.
type live struct {
	offered, sent, acked int
	sustained            float64 // deliveries/s at the receiver over the steady window
	overall              float64 // deliveries / (first post to last receipt)
	lag                  benchkit.Durations
	duplicates, missing  int
	badSig               int
	cpuCores             float64
	rssMB                float64
	baseline             float64 // bare loop's posts/s
	drain                float64 // deliveries/s draining a backlog
	drainMissing         int
	drainDuplicates      int
	// At the end of the sends: deliveries the fan-out had not made yet,
	// and deliveries pending in the dispatcher's queue.
	notFannedOut, pendingAtEnd int
}

// steadyFrom is where the steady window starts after the first post: the
// subscriptions and connections are warm by then.
const steadyFrom = 2 * time.Second

func runOnce(bin string, rc *receiver, rate, subs int, duration time.Duration, k, drainN int) (live, error) {
	e, err := openEnv(bin)
	if err != nil {
		return live{}, err
	}
	defer e.close()
	rc.reset()
	ids := make([]string, subs)
	for i := range subs {
		p := subPath("/s/", i)
		id, secret, err := e.subscribe(rc.base + p)
		if err != nil {
			return live{}, err
		}
		ids[i] = id
		rc.subscribe(p, secret)
	}
	var res live
	interval := time.Second / time.Duration(rate)
	n := int(duration / interval)
	res.offered = rate * subs
	cpu0, _ := e.srv.CPU()
	start := time.Now()
	var acked atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), duration+60*time.Second)
	defer cancel()
	benchkit.Pace(start, interval, n, func(int, time.Time) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if e.post(ctx) == nil {
				acked.Add(1)
			}
		}()
	})
	wg.Wait()
	res.sent, res.acked = n, int(acked.Load())
	// Where the deliveries not yet made are when the sends end: before
	// the fan-out (events not yet turned into deliveries) or in the
	// dispatcher's queue (pending).
	if db, err := e.store(); err == nil {
		made, err1 := count(db, `SELECT COUNT(*) FROM wh_deliveries`)
		pending, err2 := count(db, `SELECT COUNT(*) FROM wh_deliveries WHERE state = 'pending'`)
		if err1 == nil && err2 == nil {
			res.notFannedOut, res.pendingAtEnd = res.acked*subs-made, pending
		}
		db.Close()
	}
	t := rc.waitFor("/s/", res.acked*subs, 30*time.Second)
	end := t.last
	if end.IsZero() {
		end = time.Now()
	}
	cpu1, _ := e.srv.CPU()
	rss, _ := e.srv.RSS()
	res.cpuCores = float64(cpu1-cpu0) / float64(end.Sub(start))
	res.rssMB = float64(rss) / (1 << 20)
	window := max(duration-steadyFrom, time.Second)
	res.sustained = float64(rc.between(start.Add(steadyFrom), start.Add(duration))) / window.Seconds()
	res.overall = float64(t.distinct+t.duplicates) / end.Sub(start).Seconds()
	res.duplicates, res.missing = t.duplicates, res.acked*subs-t.distinct
	rc.mu.Lock()
	res.lag, res.badSig = append(benchkit.Durations(nil), rc.lags...), rc.badSig
	bodySize := rc.bodySize
	rc.mu.Unlock()

	res.baseline = bareLoop(rc, k, bodySize, duration)

	if drainN > 0 {
		for _, id := range ids {
			if _, err := e.core.Commands.DeleteWebhookSubscription(context.Background(),
				commands.DeleteWebhookSubscription{ShopID: e.tenant.ShopID, SubscriptionID: id}, meta); err != nil {
				return live{}, fmt.Errorf("delete subscription: %w", err)
			}
		}
		if res.drain, res.drainMissing, res.drainDuplicates, err = drain(e, rc, subs, drainN); err != nil {
			return live{}, err
		}
	}
	return res, nil
}

// bareLoop posts signed bodies of size bytes to the receiver from k
// goroutines for d (keep-alive connections) and returns posts/s.
func bareLoop(rc *receiver, k, size int, d time.Duration) float64 {
	if size <= 0 {
		size = 512
	}
	body := make([]byte, size)
	for i := range body {
		body[i] = 'x'
	}
	client := benchkit.Client(k, 10*time.Second)
	rc.baseline.Store(0)
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				mac := hmac.New(sha256.New, baselineSecret)
				mac.Write(body)
				req, _ := http.NewRequest(http.MethodPost, rc.base+"/baseline", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Service-Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
				req.Header.Set("X-Service-Event-Id", "evt_baseline")
				req.Header.Set("X-Service-Event-Type", "customer.created")
				req.Header.Set("X-Service-Timestamp", fmt.Sprint(time.Now().Unix()))
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	client.CloseIdleConnections()
	return float64(rc.baseline.Load()) / time.Since(start).Seconds()
}

// drain measures how fast a backlog of n deliveries (n/subs events to
// each of subs subscriptions) goes out once its endpoints answer. The
// backlog is made by disabling the subscriptions while the events are
// posted (their deliveries are held), then enabling them and asking for a
// recover of everything since before the posts: the dispatcher's backoff
// after failed attempts (10 s, 1 min, then 5 min at most, and only one
// probe at a time meanwhile) would measure the backoff, not the drain.
func drain(e *env, rc *receiver, subs, n int) (rate float64, missing, duplicates int, err error) {
	events := n / subs
	since := time.Now().Add(-time.Second)
	ids := make([]string, subs)
	for i := range subs {
		p := subPath("/d/", i)
		id, secret, err := e.subscribe(rc.base + p)
		if err != nil {
			return 0, 0, 0, err
		}
		ids[i] = id
		rc.subscribe(p, secret)
		if err := e.setEnabled(id, false); err != nil {
			return 0, 0, 0, fmt.Errorf("disable subscription: %w", err)
		}
	}
	acked := e.postMany(events)
	db, err := e.store()
	if err != nil {
		return 0, 0, 0, err
	}
	defer db.Close()
	want := acked * subs
	err = benchkit.WaitFor(2*time.Minute, "backlog held", func() bool {
		c, err := count(db, `SELECT COUNT(*) FROM wh_deliveries WHERE state = 'held'`)
		return err == nil && c >= want
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%w (%d of %d webhooks acknowledged; deliveries by state: %s)", err, acked, events, states(db))
	}
	start := time.Now()
	for _, id := range ids {
		if err := e.setEnabled(id, true); err != nil {
			return 0, 0, 0, fmt.Errorf("enable subscription: %w", err)
		}
		if _, err := e.core.Commands.RedeliverWebhooks(context.Background(), commands.RedeliverWebhooks{ShopID: e.tenant.ShopID,
			SubscriptionID: id, Since: since}, meta); err != nil {
			return 0, 0, 0, fmt.Errorf("recover: %w", err)
		}
	}
	t := rc.waitFor("/d/", want, 30*time.Second)
	if t.last.IsZero() {
		return 0, want, 0, errors.New("drain: nothing arrived")
	}
	return float64(t.distinct) / t.last.Sub(start).Seconds(), want - t.distinct, t.duplicates, nil
}

// states counts the deliveries by state, for an error message.
func states(db *sql.DB) string {
	rows, err := db.Query(`SELECT state, COUNT(*) FROM wh_deliveries GROUP BY state`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return err.Error()
		}
		out = append(out, fmt.Sprintf("%s %d", s, n))
	}
	return strings.Join(out, ", ")
}

// memory is the dead-endpoint figures.
type memory struct {
	events                        int
	rssBefore, rssQueued, rssLate float64 // MB
	pendingQueued, pendingLate    int
	attemptsLate                  int
	retryWindow                   time.Duration
}

// deadEndpoint queues events for a subscription whose endpoint is a
// closed port and reads the server's memory before, once they are queued
// and after retrying for wait.
func deadEndpoint(bin string, events int, wait time.Duration) (memory, error) {
	e, err := openEnv(bin)
	if err != nil {
		return memory{}, err
	}
	defer e.close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return memory{}, err
	}
	dead := "http://" + ln.Addr().String() + "/dead"
	ln.Close()
	if _, _, err := e.subscribe(dead); err != nil {
		return memory{}, err
	}
	m := memory{events: events, retryWindow: wait}
	rss := func() float64 { v, _ := e.srv.RSS(); return float64(v) / (1 << 20) }
	m.rssBefore = rss()
	acked := e.postMany(events)
	db, err := e.store()
	if err != nil {
		return memory{}, err
	}
	defer db.Close()
	err = benchkit.WaitFor(5*time.Minute, "deliveries queued", func() bool {
		c, err := count(db, `SELECT COUNT(*) FROM wh_deliveries`)
		return err == nil && c >= acked
	})
	if err != nil {
		return memory{}, err
	}
	m.rssQueued = rss()
	if m.pendingQueued, err = count(db, `SELECT COUNT(*) FROM wh_deliveries WHERE state = 'pending'`); err != nil {
		return memory{}, err
	}
	time.Sleep(wait)
	m.rssLate = rss()
	if m.pendingLate, err = count(db, `SELECT COUNT(*) FROM wh_deliveries WHERE state = 'pending'`); err != nil {
		return memory{}, err
	}
	if m.attemptsLate, err = count(db, `SELECT COUNT(*) FROM wh_attempts`); err != nil {
		return memory{}, err
	}
	return m, nil
}
