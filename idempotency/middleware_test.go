package idempotency_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/idempotency/sqlite"
)

// Every key and body of these tests holds a marker that must never reach
// the logs.
const (
	keyMarker  = "SECRETKEY"
	bodyMarker = "SECRETBODY"
)

func secretKey(name string) string { return keyMarker + "-" + name }

func body(name string) string {
	return `{"data":{"attributes":{"name":"` + bodyMarker + `-` + name + `"}}}`
}

// counter is a write handler that counts its executions. By default it
// answers 201 like a create: the single-resource envelope built from the
// execution number and the SHA-256 of the body it received, with Location
// and X-Event-Position. behave, when set, answers instead.
type counter struct {
	n      atomic.Int64
	behave func(n int64, w http.ResponseWriter, r *http.Request) bool
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := c.n.Add(1)
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if c.behave != nil && c.behave(n, w, r) {
		return
	}
	sum := sha256.Sum256(raw)
	id := fmt.Sprintf("cmp_%d", n)
	w.Header().Set("Location", "/api/v1/campaigns/"+id)
	w.Header().Set(httpapi.HeaderEventPosition, fmt.Sprint(100+n))
	w.Header().Set("X-Not-Replayed", "per-request")
	_ = httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"data": map[string]any{
		"id": id, "type": "campaign", "attributes": map[string]any{"body_sha256": hex.EncodeToString(sum[:])},
	}})
}

// syncBuffer collects the log lines of a test server.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// scopeFromBearer stands in for authentication: "Bearer tok_x" is the
// token tok_x.
func scopeFromBearer(r *http.Request) (string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return tok, ok && tok != ""
}

func openStore(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// serve runs h behind the middleware and the service's Stack, the way the
// admin API wires it, and checks when the test ends that the logs (at debug
// level) never held a key or a body.
func serve(t *testing.T, store idempotency.Store, opts idempotency.Options, h http.Handler) *httptest.Server {
	t.Helper()
	logs := &syncBuffer{}
	stack, err := httpapi.NewStack(httpapi.StackConfig{Logger: zerolog.New(logs).Level(zerolog.DebugLevel)})
	if err != nil {
		t.Fatal(err)
	}
	mw := idempotency.Middleware(store, scopeFromBearer, opts)
	r := httpapi.NewRouter()
	httpapi.Handle(r, httpapi.Stable, http.MethodPost, "/api/v1/campaigns", mw(h))
	httpapi.Handle(r, httpapi.Stable, http.MethodPatch, "/api/v1/campaigns/{id}", mw(h))
	httpapi.Handle(r, httpapi.Stable, http.MethodGet, "/api/v1/campaigns", mw(h))
	srv := httptest.NewServer(stack.Wrap(r))
	t.Cleanup(func() {
		srv.Close()
		out := logs.String()
		if !strings.Contains(out, `"request"`) {
			t.Errorf("no access log was written: the leak check below would prove nothing")
		}
		if strings.Contains(out, keyMarker) || strings.Contains(out, bodyMarker) {
			t.Errorf("the logs hold an Idempotency-Key or a body:\n%s", out)
		}
	})
	return srv
}

type result struct {
	status int
	header http.Header
	body   []byte
}

func (r result) code() string {
	var env struct {
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &env)
	return env.Error.Code
}

func do(t testing.TB, srv *httptest.Server, method, path, token, key, payload string) result {
	t.Helper()
	res, err := send(srv, method, path, token, key, payload)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func send(srv *httptest.Server, method, path, token, key, payload string) (result, error) {
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(payload))
	if err != nil {
		return result{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set(idempotency.HeaderKey, key)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return result{}, err
	}
	return result{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func TestReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "idempotency.db")
	h := &counter{}
	srv := serve(t, openStore(t, path), idempotency.Options{}, h)
	// A second server on the same file, as another process would be.
	other := serve(t, openStore(t, path), idempotency.Options{}, h)
	key := secretKey("replay")

	first := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", key, body("a"))
	if first.status != http.StatusCreated || first.header.Get(idempotency.HeaderReplayed) != "" {
		t.Fatalf("first = %d %q (replayed %q)", first.status, first.body, first.header.Get(idempotency.HeaderReplayed))
	}
	for name, s := range map[string]*httptest.Server{"same server": srv, "other server": other} {
		again := do(t, s, http.MethodPost, "/api/v1/campaigns", "tok_a", key, body("a"))
		if again.status != http.StatusCreated || !bytes.Equal(again.body, first.body) {
			t.Fatalf("%s: replay = %d %q, want %d %q", name, again.status, again.body, first.status, first.body)
		}
		if got := again.header.Get(idempotency.HeaderReplayed); got != "true" {
			t.Errorf("%s: Idempotent-Replayed = %q, want true", name, got)
		}
		for _, k := range []string{"Content-Type", "Location", httpapi.HeaderEventPosition, "X-Content-Type-Options", httpapi.HeaderStability} {
			if again.header.Get(k) != first.header.Get(k) || first.header.Get(k) == "" {
				t.Errorf("%s: header %s = %q, first had %q", name, k, again.header.Get(k), first.header.Get(k))
			}
		}
		if again.header.Get("X-Not-Replayed") != "" {
			t.Errorf("%s: a header outside the replay list was replayed", name)
		}
		if id := again.header.Get(httpapi.HeaderRequestID); id == "" || id == first.header.Get(httpapi.HeaderRequestID) {
			t.Errorf("%s: X-Request-Id %q is not the replaying request's own", name, id)
		}
	}
	if n := h.n.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
	// A PATCH is covered the same way.
	patch := do(t, srv, http.MethodPatch, "/api/v1/campaigns/cmp_1", "tok_a", secretKey("patch"), body("p"))
	again := do(t, srv, http.MethodPatch, "/api/v1/campaigns/cmp_1", "tok_a", secretKey("patch"), body("p"))
	if !bytes.Equal(patch.body, again.body) || again.header.Get(idempotency.HeaderReplayed) != "true" || h.n.Load() != 2 {
		t.Fatalf("PATCH replay = %q (replayed %q, %d runs)", again.body, again.header.Get(idempotency.HeaderReplayed), h.n.Load())
	}
}

func TestBodyReachesHandler(t *testing.T) {
	h := &counter{}
	srv := serve(t, openStore(t, filepath.Join(t.TempDir(), "i.db")), idempotency.Options{}, h)
	res := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("b"), body("b"))
	sum := sha256.Sum256([]byte(body("b")))
	if !bytes.Contains(res.body, []byte(hex.EncodeToString(sum[:]))) {
		t.Fatalf("the handler did not receive the body the middleware read: %s", res.body)
	}
}

func TestReusedKey(t *testing.T) {
	h := &counter{}
	srv := serve(t, openStore(t, filepath.Join(t.TempDir(), "i.db")), idempotency.Options{}, h)
	key := secretKey("reused")
	do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", key, body("a"))
	for name, req := range map[string][2]string{
		"other body":  {"/api/v1/campaigns", body("b")},
		"other query": {"/api/v1/campaigns?dry_run=1", body("a")},
		"other path":  {"/api/v1/campaigns/cmp_1", body("a")},
	} {
		method := http.MethodPost
		if strings.Count(req[0], "/") == 4 {
			method = http.MethodPatch
		}
		res := do(t, srv, method, req[0], "tok_a", key, req[1])
		if res.status != http.StatusConflict || res.code() != httpapi.CodeIdempotencyKeyReused {
			t.Errorf("%s: %d %s, want 409 idempotency_key_reused", name, res.status, res.body)
		}
	}
	if n := h.n.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
	// Keys belong to their token: another token's identical key is its own.
	if res := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_b", key, body("b")); res.status != http.StatusCreated {
		t.Fatalf("another token's key: %d %s", res.status, res.body)
	}
	if n := h.n.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want twice", n)
	}
}

func TestPassThrough(t *testing.T) {
	h := &counter{}
	srv := serve(t, openStore(t, filepath.Join(t.TempDir(), "i.db")), idempotency.Options{}, h)
	for range 2 {
		do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", "", body("a"))              // no key
		do(t, srv, http.MethodPost, "/api/v1/campaigns", "", secretKey("anon"), body("a"))    // no scope
		do(t, srv, http.MethodGet, "/api/v1/campaigns", "tok_a", secretKey("get"), body("a")) // safe method
	}
	if n := h.n.Load(); n != 6 {
		t.Fatalf("the handler ran %d times, want 6: nothing here is idempotency-checked", n)
	}
}

// TestConcurrentSameKey holds the first request inside the handler while
// the others arrive, on two servers sharing the store: they are all told
// the key is in use, and the handler runs once.
func TestConcurrentSameKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "i.db")
	gate := make(chan struct{})
	h := &counter{behave: func(n int64, w http.ResponseWriter, r *http.Request) bool {
		<-gate
		return false
	}}
	servers := []*httptest.Server{
		serve(t, openStore(t, path), idempotency.Options{}, h),
		serve(t, openStore(t, path), idempotency.Options{}, h),
	}
	const clients = 16
	results := make(chan result, clients)
	errs := make(chan error, clients)
	for i := range clients {
		go func() {
			res, err := send(servers[i%2], http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("race"), body("a"))
			if err != nil {
				errs <- err
				return
			}
			results <- res
		}()
	}
	timeout := time.After(20 * time.Second)
	for range clients - 1 {
		select {
		case res := <-results:
			if res.status != http.StatusConflict || res.code() != httpapi.CodeIdempotencyKeyInUse {
				t.Fatalf("a concurrent request got %d %s, want 409 idempotency_key_in_use", res.status, res.body)
			}
			if res.header.Get(httpapi.HeaderRetryAfter) == "" {
				t.Error("409 idempotency_key_in_use without Retry-After")
			}
		case err := <-errs:
			t.Fatal(err)
		case <-timeout:
			t.Fatal("the concurrent requests were not answered while the first one ran")
		}
	}
	close(gate)
	select {
	case res := <-results:
		if res.status != http.StatusCreated {
			t.Fatalf("the first request got %d %s", res.status, res.body)
		}
	case err := <-errs:
		t.Fatal(err)
	case <-timeout:
		t.Fatal("the first request did not finish")
	}
	if n := h.n.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
	if res := do(t, servers[1], http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("race"), body("a")); res.header.Get(idempotency.HeaderReplayed) != "true" {
		t.Fatalf("after the first finished: %d %s, want a replay", res.status, res.body)
	}
}

// TestConcurrentFreeRunning lets requests overlap however they do: every
// answer is the one response, replayed, or in_use; the handler runs once.
func TestConcurrentFreeRunning(t *testing.T) {
	h := &counter{}
	srv := serve(t, openStore(t, filepath.Join(t.TempDir(), "i.db")), idempotency.Options{}, h)
	const clients = 32
	var wg sync.WaitGroup
	results := make([]result, clients)
	errs := make([]error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = send(srv, http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("free"), body("a"))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var created []byte
	for _, res := range results {
		switch {
		case res.status == http.StatusCreated:
			if created != nil && !bytes.Equal(created, res.body) {
				t.Fatalf("two different 201 bodies: %s and %s", created, res.body)
			}
			created = res.body
		case res.status == http.StatusConflict && res.code() == httpapi.CodeIdempotencyKeyInUse:
		default:
			t.Fatalf("unexpected answer %d %s", res.status, res.body)
		}
	}
	if n := h.n.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}

// TestWhatIsStored: a response that says the request failed before any
// work, or failed on our side, releases the key, so the retry runs; a
// success or a resource conflict is stored and replayed.
func TestWhatIsStored(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request)
		stored bool
	}{
		{"400 invalid_json", errorAnswer(httpapi.InvalidJSON()), false},
		{"401 invalid_token", errorAnswer(httpapi.InvalidToken()), false},
		{"402 credits_exhausted", errorAnswer(httpapi.CreditsExhausted(0, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))), false},
		{"403 scope_required", errorAnswer(httpapi.ScopeRequired("campaigns:write")), false},
		{"404 not_found", errorAnswer(httpapi.NotFound("campaign")), false},
		{"413 payload_too_large", errorAnswer(httpapi.PayloadTooLarge(10)), false},
		{"415 unsupported_media_type", errorAnswer(httpapi.UnsupportedMediaType()), false},
		{"422 validation_failed", errorAnswer(httpapi.ValidationFailed("name", "is required")), false},
		{"429 rate_limited", errorAnswer(httpapi.RateLimited(time.Second)), false},
		{"500 internal_error", errorAnswer(errors.New("boom")), false},
		{"503 unavailable", errorAnswer(httpapi.Unavailable(time.Second)), false},
		{"409 conflict with Retry-After", errorAnswer(&httpapi.Error{Status: http.StatusConflict,
			Code: httpapi.CodeConflict, Message: "retry", RetryAfter: time.Second}), false},
		{"409 conflict", errorAnswer(&httpapi.Error{Status: http.StatusConflict,
			Code: httpapi.CodeConflict, Message: "the campaign is already launched"}), true},
		{"200", func(w http.ResponseWriter, r *http.Request) {
			_ = httpapi.WriteJSON(w, http.StatusOK, map[string]int{"ok": 1})
		}, true},
		{"204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, true},
		{"implicit 200", func(w http.ResponseWriter, r *http.Request) {}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &counter{behave: func(n int64, w http.ResponseWriter, r *http.Request) bool {
				if n == 1 {
					tc.answer(w, r)
					return true
				}
				return false
			}}
			srv := serve(t, openStore(t, filepath.Join(t.TempDir(), "i.db")), idempotency.Options{}, h)
			first := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("s"), body("a"))
			second := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("s"), body("a"))
			if tc.stored {
				if h.n.Load() != 1 || second.status != first.status || !bytes.Equal(second.body, first.body) ||
					second.header.Get(idempotency.HeaderReplayed) != "true" {
					t.Fatalf("want the first answer replayed; got %d %s after %d %s (%d runs)",
						second.status, second.body, first.status, first.body, h.n.Load())
				}
				return
			}
			if h.n.Load() != 2 || second.status != http.StatusCreated {
				t.Fatalf("want the retry to run; got %d %s (%d runs)", second.status, second.body, h.n.Load())
			}
			third := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("s"), body("a"))
			if h.n.Load() != 2 || !bytes.Equal(third.body, second.body) {
				t.Fatalf("the retry's 201 was not stored: %d %s (%d runs)", third.status, third.body, h.n.Load())
			}
		})
	}
}

func errorAnswer(err error) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) { httpapi.WriteError(w, r, err) }
}

func TestLargeResponseNotStored(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 64<<10)
	h := &counter{behave: func(n int64, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusCreated)
		for i := 0; i < len(big); i += 1000 {
			_, _ = w.Write(big[i:min(i+1000, len(big))])
		}
		return true
	}}
	srv := serve(t, openStore(t, filepath.Join(t.TempDir(), "i.db")), idempotency.Options{MaxResponseBytes: 4096}, h)
	for i := range 2 {
		res := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("big"), body("a"))
		if res.status != http.StatusCreated || !bytes.Equal(res.body, big) || res.header.Get(idempotency.HeaderReplayed) != "" {
			t.Fatalf("request %d: %d, %d bytes, replayed %q; want the whole 201 executed", i, res.status, len(res.body), res.header.Get(idempotency.HeaderReplayed))
		}
	}
	if n := h.n.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want twice: a response too large to store releases its key", n)
	}
}

func TestPanicReleases(t *testing.T) {
	h := &counter{behave: func(n int64, w http.ResponseWriter, r *http.Request) bool {
		if n == 1 {
			w.Header().Set("Location", "/half-done")
			_, _ = w.Write([]byte("partial"))
			panic("handler failed")
		}
		return false
	}}
	srv := serve(t, openStore(t, filepath.Join(t.TempDir(), "i.db")), idempotency.Options{}, h)
	first := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("p"), body("a"))
	if first.status != http.StatusInternalServerError || first.code() != httpapi.CodeInternal {
		t.Fatalf("panicking handler: %d %s, want the 500 envelope", first.status, first.body)
	}
	if loc := first.header.Get("Location"); loc != "" {
		t.Errorf("the 500 carries the panicking handler's Location %q", loc)
	}
	second := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("p"), body("a"))
	if second.status != http.StatusCreated || h.n.Load() != 2 {
		t.Fatalf("retry after a panic: %d %s (%d runs), want it run again", second.status, second.body, h.n.Load())
	}
}

func TestInvalidKeys(t *testing.T) {
	h := &counter{}
	srv := serve(t, openStore(t, filepath.Join(t.TempDir(), "i.db")), idempotency.Options{}, h)
	for name, key := range map[string]string{
		"256 characters":  strings.Repeat("k", 256),
		"256 runes":       strings.Repeat("é", 256),
		"tab inside":      keyMarker + "\tx",
		"invalid UTF-8":   keyMarker + "\xff",
		"empty after OWS": " ",
	} {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/campaigns", strings.NewReader(body("a")))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tok_a")
		req.Header[idempotency.HeaderKey] = []string{key}
		checkInvalid(t, srv, req, name)
	}
	twice, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/campaigns", strings.NewReader(body("a")))
	if err != nil {
		t.Fatal(err)
	}
	twice.Header.Set("Authorization", "Bearer tok_a")
	twice.Header[idempotency.HeaderKey] = []string{"a", "b"}
	checkInvalid(t, srv, twice, "sent twice")
	if n := h.n.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for invalid keys", n)
	}
	for name, key := range map[string]string{
		"255 characters": strings.Repeat("k", 255),
		"255 runes":      strings.Repeat("é", 255),
		"UUID":           "8e03978e-40d5-43e8-bc93-6894a57f9324",
		"quoted":         `"8e03978e"`,
	} {
		if res := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", key, body("a")); res.status != http.StatusCreated {
			t.Errorf("%s: %d %s, want 201", name, res.status, res.body)
		}
	}
}

func checkInvalid(t *testing.T, srv *httptest.Server, req *http.Request, name string) {
	t.Helper()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer resp.Body.Close()
	var env struct {
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if resp.StatusCode != http.StatusBadRequest || env.Error.Code != httpapi.CodeInvalidParameter ||
		env.Error.Details["field"] != idempotency.HeaderKey {
		t.Errorf("%s: %d %+v, want 400 invalid_parameter on Idempotency-Key", name, resp.StatusCode, env.Error)
	}
}

func TestRequestTooLarge(t *testing.T) {
	h := &counter{}
	srv := serve(t, openStore(t, filepath.Join(t.TempDir(), "i.db")), idempotency.Options{MaxRequestBytes: 1024}, h)
	res := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("l"), strings.Repeat(bodyMarker, 200))
	if res.status != http.StatusRequestEntityTooLarge || res.code() != httpapi.CodePayloadTooLarge {
		t.Fatalf("oversized body: %d %s, want 413", res.status, res.body)
	}
	// Nothing was claimed: the key is free for a proper request.
	if res := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("l"), body("a")); res.status != http.StatusCreated || h.n.Load() != 1 {
		t.Fatalf("after the 413: %d %s (%d runs)", res.status, res.body, h.n.Load())
	}
}

func TestStoreUnavailable(t *testing.T) {
	h := &counter{}
	store := openStore(t, filepath.Join(t.TempDir(), "i.db"))
	srv := serve(t, store, idempotency.Options{}, h)
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	res := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("u"), body("a"))
	if res.status != http.StatusServiceUnavailable || res.code() != httpapi.CodeUnavailable || res.header.Get(httpapi.HeaderRetryAfter) == "" {
		t.Fatalf("store closed: %d %s, want 503 unavailable with Retry-After", res.status, res.body)
	}
	if n := h.n.Load(); n != 0 {
		t.Fatalf("the handler ran %d times without a claim", n)
	}
}

func TestInvalidOptionsPanic(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Middleware accepted a negative MaxResponseBytes")
		}
	}()
	idempotency.Middleware(openStore(t, filepath.Join(t.TempDir(), "i.db")), scopeFromBearer, idempotency.Options{MaxResponseBytes: -1})
}

// TestHeadersAfterStatus: as with net/http, headers changed after the
// status was written are neither sent nor stored.
func TestHeadersAfterStatus(t *testing.T) {
	h := &counter{behave: func(n int64, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Location", "/api/v1/campaigns/cmp_1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Header().Set("Location", "/late")
		_, _ = w.Write([]byte(`{}`))
		return true
	}}
	srv := serve(t, openStore(t, filepath.Join(t.TempDir(), "i.db")), idempotency.Options{}, h)
	for i := range 2 {
		res := do(t, srv, http.MethodPost, "/api/v1/campaigns", "tok_a", secretKey("h"), body("a"))
		if got := res.header.Get("Location"); res.status != http.StatusCreated || got != "/api/v1/campaigns/cmp_1" {
			t.Fatalf("request %d: %d with Location %q, want 201 with the Location set before the status", i, res.status, got)
		}
	}
	if n := h.n.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}

// Only an answer its handler marked with SealAnswer is stored sealed; a
// replay of either answers the original bytes.
func TestSealAnswerSealsOnlyMarkedAnswers(t *testing.T) {
	dir := t.TempDir()
	store := openStore(t, filepath.Join(dir, "idem.db"))
	sealer, err := idempotency.NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	h := idempotency.Middleware(store, func(*http.Request) (string, bool) { return "tok", true }, idempotency.Options{Sealer: sealer})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/sealed" {
				idempotency.SealAnswer(w)
			}
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"secret":"whsec_`+r.URL.Path[1:]+`"}`)
		}))
	for _, path := range []string{"/sealed", "/open"} {
		for i := 0; i < 2; i++ {
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{}`))
			req.Header.Set("Idempotency-Key", "k"+path[1:])
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusCreated || rec.Body.String() != `{"secret":"whsec_`+path[1:]+`"}` ||
				(i == 1) != (rec.Header().Get(idempotency.HeaderReplayed) == "true") {
				t.Fatalf("%s #%d: %d %s", path, i, rec.Code, rec.Body)
			}
		}
	}
	var all []byte
	files, _ := filepath.Glob(filepath.Join(dir, "idem.db*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all = append(all, b...)
	}
	if bytes.Contains(all, []byte("whsec_sealed")) || !bytes.Contains(all, []byte("whsec_open")) {
		t.Errorf("stored: sealed one in clear %v, open one in clear %v", bytes.Contains(all, []byte("whsec_sealed")),
			bytes.Contains(all, []byte("whsec_open")))
	}
}
