package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	logpostgres "github.com/cgp-platform/cgp/eventlog/postgres"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// Scale-out (issue 23): several servers over one event log and key vault
// in PostgreSQL and counters in Redis. PostgreSQL and Redis run on every
// development and CI machine: these tests always run.

func testPostgresURL() string {
	if s := os.Getenv("CGP_TEST_POSTGRES_URL"); s != "" {
		return s
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

func testRedisURL() string {
	if s := os.Getenv("CGP_TEST_REDIS_URL"); s != "" {
		return s
	}
	return "redis://127.0.0.1:6379/0"
}

// withParam returns url with one more query parameter.
func withParam(url, kv string) string {
	if strings.Contains(url, "?") {
		return url + "&" + kv
	}
	return url + "?" + kv
}

// sharedStores are the stores several test servers share: an event log
// and a key vault in PostgreSQL schemas of their own (dropped at the
// end), Redis, and one master key.
type sharedStores struct {
	logURL, vaultURL, redisURL, masterKey, leaseNamespace string
}

func newSharedStores(t *testing.T) sharedStores {
	t.Helper()
	b := make([]byte, 8)
	key := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	suffix := hex.EncodeToString(b)
	logSchema, vaultSchema := "cgp_t_log_"+suffix, "cgp_t_vault_"+suffix
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, testPostgresURL())
		if err != nil {
			t.Logf("drop the test schemas: %v", err)
			return
		}
		defer conn.Close(ctx)
		for _, s := range []string{logSchema, vaultSchema} {
			if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+s+" CASCADE"); err != nil {
				t.Logf("drop %s: %v", s, err)
			}
		}
	})
	return sharedStores{logURL: withParam(testPostgresURL(), "search_path="+logSchema),
		vaultURL: withParam(testPostgresURL(), "search_path="+vaultSchema), redisURL: testRedisURL(), masterKey: hex.EncodeToString(key),
		leaseNamespace: "cgp-test-" + suffix}
}

// configure sets c to the shared stores, behind the test's trusted proxy.
func (st sharedStores) configure(c *Config) {
	c.EventLog, c.PostgresLogURL = "postgres", st.logURL
	c.Vault, c.PostgresURL = "postgres", st.vaultURL
	c.RedisURL, c.MasterKey = st.redisURL, st.masterKey
	c.LeasePostgresURL, c.LeaseNamespace = testPostgresURL(), st.leaseNamespace
	c.Test.Lease = app.LeaseHooks{Poll: 20 * time.Millisecond, Check: 50 * time.Millisecond, Settle: 200 * time.Millisecond}
	c.TrustedProxies = []string{"127.0.0.1/32"}
}

// server starts a server on its own data directory over the shared
// stores; the CLI helpers open the same stores for that directory.
func (st sharedStores) server(t *testing.T, mod func(*Config)) (*testServer, string) {
	t.Helper()
	dir := t.TempDir()
	st.register(t, dir)
	return startServerWith(t, dir, func(c *Config) {
		st.configure(c)
		if mod != nil {
			mod(c)
		}
	}), dir
}

// randomIP is a client address of the benchmarking range no other test
// uses, so the shared Redis counters start empty for it.
func randomIP(t *testing.T) string {
	b := make([]byte, 2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("198.19.%d.%d", b[0], b[1]|1)
}

// TestTwoServersOverPostgres: two servers over one PostgreSQL event log
// and vault and one Redis behave as one service: each job with side
// effects runs on one of them (a PostgreSQL lease); an admin-interface
// session started on one works on the other; a token minted on one works
// on the other at once; a webhook delivered to both is applied once;
// X-Wait-For-Position on either reads the other's write; the rate limit
// and the brute-force guard count across both; a token rotated on one
// works on the other and its old secret stops there too.
func TestTwoServersOverPostgres(t *testing.T) {
	st := newSharedStores(t)
	s1, dir1 := st.server(t, nil)
	s2, _ := st.server(t, nil)
	tn := newTenant(t, dir1, "scale-"+strings.ToLower(randomSuffix(t))+".example.com", "agency", "*")
	waitForToken(t, s1, tn)
	waitForToken(t, s2, tn)

	// Each job with side effects runs on exactly one of them.
	for _, job := range []string{"message_sending", "webhook_delivery", "notifications"} {
		eventually(t, time.Minute, job+" on exactly one server", func() bool {
			return leaseHeld(t, s1.base, job) != leaseHeld(t, s2.base, job)
		})
	}

	// A merchant signed in to the admin interface on one server is signed
	// in on the other (the sessions are in Redis).
	admin := signInAs(t, s1, dir1, tn.accountID, "owner@"+tn.domain, "owner", "127.0.0.1")
	if r := adminDo(t, http.MethodGet, s2.base+"/admin", "127.0.0.1", admin.session, nil, nil); r.status != 200 ||
		!strings.Contains(string(r.body), tn.domain) {
		t.Fatalf("the session on s2: %d", r.status)
	}
	// A token minted on s1 (through its admin interface) works on s2 at
	// its first request: an unknown token waits for the credentials read
	// model to reach the log's head.
	minted := secretOf(admin.post(t, "/admin/shops/"+tn.shopID+"/tokens", url.Values{"name": {"minted on s1"}, "scopes": {"customers:read"}}))
	if minted == "" {
		t.Fatal("no token minted on s1")
	}
	if r := s2.get(t, "/api/v1/customers", minted); r.status != 200 {
		t.Fatalf("the token minted on s1, on s2: %d %s", r.status, r.body)
	}

	// A webhook the platform retries on the other node: applied once.
	body := customerPayload(7, "two@scale.example.com", 1, "10.00", "2026-10-01T10:00:00Z")
	w1 := s1.webhook(t, tn, "customers/create", "dlv-scale-1", body)
	w2 := s2.webhook(t, tn, "customers/create", "dlv-scale-1", body)
	if w1.status != 200 || w2.status != 200 {
		t.Fatalf("deliveries: %d %d", w1.status, w2.status)
	}
	cus := domain.CustomerIDFromExternal(tn.shopID, "7")
	for _, s := range []*testServer{s1, s2} {
		r := s.get(t, "/api/v1/audit-events?filter[stream]=customer-"+cus, tn.token, "X-Wait-For-Position", maxPosition(t, w1, w2))
		if r.status != 200 || len(r.json(t)["data"].([]any)) != 1 {
			t.Fatalf("the customer's events on %s: %d %s", s.base, r.status, r.body)
		}
	}

	// X-Wait-For-Position on one server reads the other's write.
	patch := do(t, http.MethodPatch, s1.base+"/api/v1/customers/"+cus, []byte(`{"data":{"attributes":{"tags":["from-s1"]}}}`),
		map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"})
	if patch.status != 200 {
		t.Fatalf("patch on s1: %d %s", patch.status, patch.body)
	}
	read := s2.get(t, "/api/v1/customers/"+cus, tn.token, "X-Wait-For-Position", patch.position(t))
	if read.status != 200 || !strings.Contains(string(read.body), "from-s1") {
		t.Fatalf("s2 after X-Wait-For-Position %s: %d %s", patch.position(t), read.status, read.body)
	}

	// The rate limit counts across both servers.
	reader := cli(t, dir1, "tokens", "create", "--shop", tn.shopID, "--scopes", "customers:read", "--name", "reader")
	rt := reader["token"].(string)
	var remaining []int
	for i, s := range []*testServer{s1, s2, s1, s2} {
		r := s.get(t, "/api/v1/customers", rt, "X-Wait-For-Position", fmt.Sprint(reader["position"]))
		n, err := strconv.Atoi(r.header.Get("X-RateLimit-Remaining"))
		if r.status != 200 || err != nil {
			t.Fatalf("request %d: %d %v", i, r.status, r.header)
		}
		remaining = append(remaining, n)
	}
	for i := 1; i < len(remaining); i++ {
		if remaining[i] >= remaining[i-1] {
			t.Fatalf("the rate limit is not shared: remaining %v", remaining)
		}
	}

	// The brute-force guard counts across both: ten failures, five on
	// each, then the eleventh is refused on either.
	ip := randomIP(t)
	bad := "copt_live_" + strings.Repeat("Z", 32)
	for i := 0; i < 10; i++ {
		s := []*testServer{s1, s2}[i%2]
		if r := s.get(t, "/api/v1/customers", bad, "X-Forwarded-For", ip); r.status != 401 {
			t.Fatalf("failure %d: %d", i+1, r.status)
		}
	}
	if r := s2.get(t, "/api/v1/customers", bad, "X-Forwarded-For", ip); r.status != 429 {
		t.Fatalf("the eleventh failure, on s2: %d", r.status)
	}

	// A token rotated on s1: the new secret works on both (at once on s1,
	// on s2 as soon as its credentials read model reaches the rotation,
	// which an unknown token waits for); the old one stops on both.
	tokID := tokenID(t, dir1, tn.shopID, "reader")
	rot := do(t, http.MethodPost, s1.base+"/api/v1/api-keys/"+tokID+"/rotate", nil, map[string]string{"Authorization": "Bearer " + rt})
	if rot.status != 200 {
		t.Fatalf("rotate on s1: %d %s", rot.status, rot.body)
	}
	fresh := rot.json(t)["data"].(map[string]any)["attributes"].(map[string]any)["token"].(string)
	if r := s1.get(t, "/api/v1/customers", rt); r.status != 401 {
		t.Fatalf("the old secret on s1: %d", r.status)
	}
	if r := s2.get(t, "/api/v1/customers", fresh); r.status != 200 {
		t.Fatalf("the new secret on s2: %d %s", r.status, r.body)
	}
	eventually(t, time.Minute, "the old secret refused on s2", func() bool {
		return s2.get(t, "/api/v1/customers", rt).status == 401
	})
}

func maxPosition(t *testing.T, rs ...response) string {
	t.Helper()
	best := uint64(0)
	for _, r := range rs {
		p, err := strconv.ParseUint(r.position(t), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		best = max(best, p)
	}
	return strconv.FormatUint(best, 10)
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// env is the shared stores as the binary's environment.
func (st sharedStores) env() []string {
	return []string{"CGP_EVENT_LOG=postgres", "CGP_POSTGRES_LOG_URL=" + st.logURL, "CGP_VAULT=postgres", "CGP_POSTGRES_URL=" + st.vaultURL,
		"CGP_REDIS_URL=" + st.redisURL, "CGP_MASTER_KEY=" + st.masterKey,
		"CGP_LEASE_POSTGRES_URL=" + testPostgresURL(), "CGP_LEASE_NAMESPACE=" + st.leaseNamespace}
}

// register has the CLI helpers open the shared stores for dir.
func (st sharedStores) register(t *testing.T, dir string) {
	dirFlags.Store(dir, []string{"--event-log", "postgres", "--postgres-log-url", st.logURL, "--vault", "postgres",
		"--postgres-url", st.vaultURL, "--redis-url", st.redisURL, "--master-key", st.masterKey})
	t.Cleanup(func() { dirFlags.Delete(dir) })
}

// TestTwoServersSIGKILLOneLosesNothing: two server processes over the
// shared stores take a burst of signed webhooks, split between them; one
// is killed with SIGKILL midway and its senders retry on the other (as the
// platform retries on another node). Every acknowledged delivery is in the
// log exactly once, and the survivor serves everything.
func TestTwoServersSIGKILLOneLosesNothing(t *testing.T) {
	st := newSharedStores(t)
	d1, d2 := t.TempDir(), t.TempDir()
	st.register(t, d1)
	p1, p2 := startBinary(t, d1, st.env()...), startBinary(t, d2, st.env()...)
	tn := newTenant(t, d1, "kill-"+randomSuffix(t)+".example.com", "agency", "*")
	survivor := &testServer{t: t, base: p2.base}
	waitForToken(t, survivor, tn)

	// Each job with side effects runs on exactly one of them.
	var holder, other *process
	eventually(t, time.Minute, "one server holding the webhook_delivery lease", func() bool {
		h1, h2 := leaseHeld(t, p1.base, "webhook_delivery"), leaseHeld(t, p2.base, "webhook_delivery")
		switch {
		case h1 && !h2:
			holder, other = p1, p2
		case h2 && !h1:
			holder, other = p2, p1
		}
		return holder != nil
	})
	if holder != p1 {
		p1, p2 = p2, p1 // kill the holder
		survivor = &testServer{t: t, base: p2.base}
	}
	_ = other

	const workers, perWorker, killAfter = 16, 60, 300
	order := fixture(t, "orders/create")
	var acked sync.Map
	var nAcked atomic.Int64
	client := &http.Client{Timeout: 30 * time.Second}
	post := func(base, topic, delivery string, body []byte) bool {
		req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/events", bytes.NewReader(body))
		for k, v := range webhookHeaders(tn, topic, delivery, body) {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode/100 == 2
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				delivery := fmt.Sprintf("kill-%d-%d", w, i)
				topic, body := burstDelivery(order, w, i)
				ok := w%2 == 0 && post(p1.base, topic, delivery, body)
				if !ok { // the other node, as the platform retries
					ok = post(p2.base, topic, delivery, body)
				}
				if !ok {
					t.Errorf("delivery %s acknowledged by neither server", delivery)
					return
				}
				acked.Store(delivery, true)
				if nAcked.Add(1) == killAfter {
					p1.cmd.Process.Signal(syscall.SIGKILL)
				}
			}
		}()
	}
	wg.Wait()
	<-p1.exited

	l, err := logpostgres.Open(context.Background(), logpostgres.Config{URL: st.logURL})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	events := readAll(t, l)
	byID := map[string]int{}
	for _, e := range events {
		byID[e.ID.String()]++
	}
	missing, doubled := 0, 0
	acked.Range(func(k, _ any) bool {
		switch byID[eventlog.DeterministicID("commerce", tn.shopID, k.(string)).String()] {
		case 0:
			missing++
		case 1:
		default:
			doubled++
		}
		return true
	})
	t.Logf("%d deliveries acknowledged, SIGKILL after %d; %d events in the log", nAcked.Load(), killAfter, len(events))
	if nAcked.Load() != workers*perWorker || missing != 0 || doubled != 0 {
		t.Fatalf("acknowledged %d of %d; %d missing from the log, %d recorded twice", nAcked.Load(), workers*perWorker, missing, doubled)
	}
	// The survivor took the jobs over.
	eventually(t, time.Minute, "the survivor holding the webhook_delivery lease", func() bool {
		return leaseHeld(t, p2.base, "webhook_delivery")
	})
	// The survivor has folded every event into its read models.
	head := fmt.Sprint(events[len(events)-1].Position)
	r := survivor.get(t, "/api/v1/customers?limit=1", tn.token, "X-Wait-For-Position", head)
	if r.status != 200 {
		t.Fatalf("the survivor at the head: %d %s", r.status, r.body)
	}
}

// leaseHeld reads the server's cgp_lease_held gauge of job.
func leaseHeld(t *testing.T, base, job string) bool {
	t.Helper()
	r := do(t, http.MethodGet, base+"/metrics", nil, nil)
	if r.status != 200 {
		t.Fatalf("metrics: %d", r.status)
	}
	return strings.Contains(string(r.body), `cgp_lease_held{job="`+job+`"} 1`)
}

// TestImageOperationOnTwoServers: an image operation uploaded to the
// server that does not hold the image_operations lease is run by the
// other (one directory of pictures, --image-dir, shared by both), and its
// result is read from either.
func TestImageOperationOnTwoServers(t *testing.T) {
	st := newSharedStores(t)
	images := t.TempDir()
	s1, dir1 := st.server(t, func(c *Config) { c.ImageDir = images })
	s2, _ := st.server(t, func(c *Config) { c.ImageDir = images })
	tn := newTenant(t, dir1, "scale-img-"+randomSuffix(t)+".example.com", "pro", "customers:read")
	key := cli(t, dir1, "image-keys", "mint", "--shop", tn.shopID, "--scopes", "images:write,usage:read")["token"].(string)
	var holder, other *testServer
	eventually(t, time.Minute, "one server holding the image_operations lease", func() bool {
		h1, h2 := leaseHeld(t, s1.base, "image_operations"), leaseHeld(t, s2.base, "image_operations")
		switch {
		case h1 && !h2:
			holder, other = s1, s2
		case h2 && !h1:
			holder, other = s2, s1
		}
		return holder != nil
	})
	v := openapitest.NewValidator(t)
	r := other.imageOp(t, key, "/api/v1/images/upscales?scale=2", encodePNG(t, texture(32, 24)), "image/png")
	if r.status != http.StatusAccepted && r.status != http.StatusOK {
		t.Fatalf("upload to the server without the lease: %d %s", r.status, r.body)
	}
	id := opID(t, r)
	if a := other.waitOperation(t, v, key, id); a["status"] != "succeeded" {
		t.Fatalf("the operation: %v", a)
	}
	for _, s := range []*testServer{other, holder} {
		img, _, _ := s.result(t, key, id)
		if b := img.Bounds(); b.Dx() != 64 || b.Dy() != 48 {
			t.Fatalf("the result on %s: %v", s.base, b)
		}
	}
}
