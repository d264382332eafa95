package idempotency_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/idempotency/sqlite"
)

// ExampleMiddleware wires the middleware on a create route with the
// embedded store, then sends the same request twice: the second answer is
// the first one, replayed, and the handler ran once.
func ExampleMiddleware() {
	dir, err := os.MkdirTemp("", "idempotency-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(sqlite.Config{Path: filepath.Join(dir, "idempotency.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	runs := 0
	create := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		w.Header().Set("Location", "/api/v1/campaigns/cmp_1")
		_ = httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"data": map[string]any{"id": "cmp_1", "type": "campaign"}})
	})
	// In the service, scope names the authenticated token (auth.FromContext).
	scope := func(r *http.Request) (string, bool) { return "tok_example", true }
	mw := idempotency.Middleware(store, scope, idempotency.Options{})
	srv := httptest.NewServer(mw(create))
	defer srv.Close()

	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/campaigns",
			strings.NewReader(`{"data":{"attributes":{"name":"Spring"}}}`))
		req.Header.Set(idempotency.HeaderKey, "8e03978e-40d5-43e8-bc93-6894a57f9324")
		resp, err := srv.Client().Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Printf("%d %s replayed=%q\n", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get(idempotency.HeaderReplayed))
	}
	fmt.Println("runs:", runs)
	// Output:
	// 201 /api/v1/campaigns/cmp_1 replayed=""
	// 201 /api/v1/campaigns/cmp_1 replayed="true"
	// runs: 1
}
