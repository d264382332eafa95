package idempotency_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/idempotency/sqlite"
)

// BenchmarkMiddleware measures the middleware around a trivial create
// handler on the embedded store, without the network: a first request
// (claim, run, complete) and a replay.
func BenchmarkMiddleware(b *testing.B) {
	store, err := sqlite.Open(sqlite.Config{Path: filepath.Join(b.TempDir(), "i.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	h := idempotency.Middleware(store, func(*http.Request) (string, bool) { return "tok_bench", true }, idempotency.Options{})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "/api/v1/campaigns/cmp_1")
			_ = httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"data": map[string]any{"id": "cmp_1", "type": "campaign"}})
		}))
	payload := `{"data":{"attributes":{"name":"Spring sale","audience_id":"aud_123"}}}`
	serve := func(key string) int {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/campaigns", strings.NewReader(payload))
		req.Header.Set(idempotency.HeaderKey, key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	b.Run("First", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if code := serve("first-" + strconv.Itoa(i)); code != http.StatusCreated {
				b.Fatalf("status %d", code)
			}
		}
	})
	b.Run("Replay", func(b *testing.B) {
		serve("replayed")
		b.ReportAllocs()
		for b.Loop() {
			if code := serve("replayed"); code != http.StatusCreated {
				b.Fatalf("status %d", code)
			}
		}
	})
}
