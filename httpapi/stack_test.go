package httpapi_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cgp-platform/cgp/httpapi"
)

var requestIDPattern = regexp.MustCompile(`^req_[0-9A-Za-z]{24}$`)

func TestRequestIDAndRequestLogger(t *testing.T) {
	seen := make(chan string, 1)
	e := newEnv(t, func(r *mux.Router) {
		httpapi.HandleFunc(r, httpapi.Beta, http.MethodGet, "/hello", func(w http.ResponseWriter, req *http.Request) {
			httpapi.Logger(req.Context()).Info().Msg("inside handler")
			seen <- httpapi.RequestID(req.Context())
			w.WriteHeader(http.StatusNoContent)
		})
	})
	a := e.do(t, http.MethodGet, "/hello", "")
	inside := <-seen
	b := e.do(t, http.MethodGet, "/hello", "")
	<-seen
	idA, idB := a.header.Get("X-Request-Id"), b.header.Get("X-Request-Id")
	if !requestIDPattern.MatchString(idA) || !requestIDPattern.MatchString(idB) {
		t.Fatalf("request ids %q %q do not match %s", idA, idB, requestIDPattern)
	}
	if idA == idB {
		t.Fatal("two requests got the same id")
	}
	if cc := a.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store (answers may hold personal data)", cc)
	}
	if inside != idA {
		t.Errorf("RequestID(ctx) = %q, header = %q", inside, idA)
	}
	e.logs.wait(t, "handler line with request_id", func(l map[string]any) bool {
		return l["message"] == "inside handler" && l["request_id"] == idA
	})
}

func TestAccessLogHasTemplateNotSecrets(t *testing.T) {
	e := newEnv(t, func(r *mux.Router) {
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodPatch, "/api/v1/customers/{customer_id}", func(w http.ResponseWriter, req *http.Request) {
			_, _ = io.ReadAll(req.Body)
			_, _ = w.Write([]byte(`{"ok":true}`))
		})
	})
	token := "copt_live_SECRETSECRETSECRETSECRETSECRET12"
	r := e.do(t, http.MethodPatch, "/api/v1/customers/cus_PERSONAL?filter[email]=jane@example.com",
		`{"data":{"attributes":{"tags":["jane@example.com"]}}}`,
		"Authorization", "Bearer "+token, "Content-Type", "application/json", "Accept-Encoding", "identity")
	id := r.header.Get("X-Request-Id")
	line := e.logs.accessLine(t, id)
	want := map[string]any{"method": "PATCH", "route": "/api/v1/customers/{customer_id}", "status": float64(200), "bytes": float64(11)}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("access log %s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
	if _, ok := line["duration_ms"]; !ok {
		t.Errorf("access log lacks duration: %v", line)
	}
	logs := e.logs.text()
	for _, secret := range []string{token, "SECRET", "cus_PERSONAL", "jane", "example.com", "127.0.0.1"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q:\n%s", secret, logs)
		}
	}
}

func TestAccessLogUnmatchedRoute(t *testing.T) {
	e := newEnv(t, nil)
	r := e.do(t, http.MethodGet, "/no/such/cus_PERSONAL", "")
	line := e.logs.accessLine(t, r.header.Get("X-Request-Id"))
	if line["route"] != "unmatched" || line["status"] != float64(404) {
		t.Errorf("line = %v", line)
	}
	if strings.Contains(e.logs.text(), "cus_PERSONAL") {
		t.Error("raw path logged")
	}
}

func TestPanicAnswersEnvelopeAndLogsWithoutBody(t *testing.T) {
	e := newEnv(t, func(r *mux.Router) {
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodPost, "/boom", func(w http.ResponseWriter, req *http.Request) {
			_, _ = io.ReadAll(req.Body)
			w.Header().Set("X-Partial", "yes")
			panic("nil map write in handler")
		})
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodGet, "/fine", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		})
	})
	r := e.do(t, http.MethodPost, "/boom", `{"data":{"attributes":{"email":"jane@example.com"}}}`)
	if r.status != 500 {
		t.Fatalf("status = %d", r.status)
	}
	doc := errorOf(t, r)
	if doc.Error.Code != "internal_error" {
		t.Errorf("code = %q", doc.Error.Code)
	}
	if r.header.Get("X-Service-Stability") != "stable" {
		t.Error("panic response lost X-Service-Stability")
	}
	line := e.logs.wait(t, "panic line", func(l map[string]any) bool {
		return l["panic"] != nil && l["request_id"] == doc.Error.RequestID
	})
	if line["panic"] != "nil map write in handler" || !strings.Contains(line["stack"].(string), "stack_test.go") {
		t.Errorf("panic line = %v", line)
	}
	access := e.logs.accessLine(t, doc.Error.RequestID)
	if access["status"] != float64(500) {
		t.Errorf("access status = %v", access["status"])
	}
	if strings.Contains(e.logs.text(), "jane") {
		t.Error("request body logged")
	}
	if r := e.do(t, http.MethodGet, "/fine", ""); r.status != 204 {
		t.Errorf("server broken after panic: %d", r.status)
	}
}

func TestPanicAfterWriteAbortsResponse(t *testing.T) {
	for _, value := range []any{"late panic", http.ErrAbortHandler} {
		e := newEnv(t, func(r *mux.Router) {
			httpapi.HandleFunc(r, httpapi.Beta, http.MethodGet, "/late", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", "1000")
				_, _ = w.Write([]byte("partial"))
				w.(http.Flusher).Flush()
				panic(value)
			})
		})
		resp, err := e.srv.Client().Get(e.srv.URL + "/late")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err == nil {
			t.Errorf("panic(%v) after writing: the client read a complete response", value)
		}
	}
}

func TestCompression(t *testing.T) {
	e := newEnv(t, func(r *mux.Router) {
		big := func(w http.ResponseWriter, req *http.Request) {
			httpapi.WriteResource(w, req, 200, httpapi.Resource{ID: "x", Type: "thing",
				Attributes: map[string]string{"text": strings.Repeat("compress me ", 500)}})
		}
		httpapi.Handle(r, httpapi.Beta, http.MethodGet, "/big", httpapi.Compressed(http.HandlerFunc(big)))
		httpapi.HandleFunc(r, httpapi.Beta, http.MethodGet, "/plain", big)
	})
	plain, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/plain", nil)
	plain.Header.Set("Accept-Encoding", "gzip")
	if resp, err := e.srv.Client().Do(plain); err != nil || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("a route without Compressed was compressed: %v %v", err, resp.Header)
	} else {
		resp.Body.Close()
	}
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/big", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := e.srv.Client().Do(req) // Accept-Encoding set by hand: no transparent decompression
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding = %q", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil || !strings.Contains(string(b), "compress me") {
		t.Fatalf("decompressed body %.60q: %v", b, err)
	}
}

func TestHTTPMetrics(t *testing.T) {
	e := newEnv(t, func(r *mux.Router) {
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodGet, "/items/{id}", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		})
	})
	var ids []string
	for _, p := range []string{"/items/1", "/items/2", "/nope"} {
		ids = append(ids, e.do(t, http.MethodGet, p, "").header.Get("X-Request-Id"))
	}
	for _, id := range ids { // metrics are recorded with the access line
		e.logs.accessLine(t, id)
	}
	want := `
# HELP cgp_http_requests_total HTTP requests served, by route template, method and status.
# TYPE cgp_http_requests_total counter
cgp_http_requests_total{method="GET",route="/items/{id}",status="204"} 2
cgp_http_requests_total{method="GET",route="unmatched",status="404"} 1
`
	if err := testutil.GatherAndCompare(e.reg, strings.NewReader(want), "cgp_http_requests_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(e.reg, "cgp_http_request_duration_seconds"); n != 2 {
		t.Errorf("duration series = %d, want 2", n)
	}
}

func TestStabilityOnEveryResponseOfTheRoute(t *testing.T) {
	e := newEnv(t, func(r *mux.Router) {
		api := r.PathPrefix("/api/v1").Subrouter()
		api.Use(func(next http.Handler) http.Handler { // an auth middleware that rejects
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if req.Header.Get("Authorization") == "" {
					httpapi.WriteError(w, req, httpapi.AuthenticationRequired())
					return
				}
				next.ServeHTTP(w, req)
			})
		})
		httpapi.HandleFunc(api, httpapi.Stable, http.MethodGet, "/customers", func(w http.ResponseWriter, req *http.Request) {
			httpapi.WriteList(w, req, nil, httpapi.Page{})
		})
		httpapi.HandleFunc(r, httpapi.Beta, http.MethodGet, "/api/v1/openapi.json", func(w http.ResponseWriter, req *http.Request) {
			httpapi.WriteError(w, req, httpapi.Unavailable(0))
		})
		// The wrapper form, with a per-route middleware inside it.
		api.Handle("/customers/{customer_id}", httpapi.Stable(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.Header.Get("Authorization") != "Bearer ok" {
				httpapi.WriteError(w, req, httpapi.InvalidToken())
				return
			}
			_ = httpapi.WriteJSON(w, http.StatusOK, map[string]string{"id": mux.Vars(req)["customer_id"]})
		}))).Methods(http.MethodGet)
	})
	cases := []struct {
		path, auth, want string
		status           int
	}{
		{"/api/v1/customers", "Bearer x", "stable", 200},
		{"/api/v1/customers", "", "stable", 401},
		{"/api/v1/openapi.json", "", "beta", 503},
		{"/api/v1/customers/cus_1", "", "stable", 401},
		{"/api/v1/customers/cus_1", "Bearer x", "stable", 401},
		{"/api/v1/customers/cus_1", "Bearer ok", "stable", 200},
	}
	for _, c := range cases {
		var hdr []string
		if c.auth != "" {
			hdr = []string{"Authorization", c.auth}
		}
		r := e.do(t, http.MethodGet, c.path, "", hdr...)
		if r.status != c.status || r.header.Get("X-Service-Stability") != c.want {
			t.Errorf("%s auth=%q: %d stability %q, want %d %q", c.path, c.auth, r.status,
				r.header.Get("X-Service-Stability"), c.status, c.want)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	e := newEnv(t, func(r *mux.Router) {
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodPost, "/ack", func(w http.ResponseWriter, req *http.Request) {
			if err := httpapi.WriteJSON(w, http.StatusAccepted, map[string]string{"status": "accepted"}); err != nil {
				t.Error(err)
			}
		})
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodPost, "/bad", func(w http.ResponseWriter, req *http.Request) {
			if err := httpapi.WriteJSON(w, http.StatusOK, map[string]any{"c": make(chan int)}); err == nil {
				t.Error("WriteJSON of a channel returned no error")
			}
		})
	})
	r := e.do(t, http.MethodPost, "/ack", "")
	if r.status != 202 || string(r.body) != `{"status":"accepted"}` || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("ack: %d %s", r.status, r.body)
	}
	r = e.do(t, http.MethodPost, "/bad", "")
	if r.status != 500 || errorOf(t, r).Error.Code != "internal_error" {
		t.Errorf("unencodable: %d %s", r.status, r.body)
	}
}

// A handler that needs longer than the server's write timeout (an audit
// verification of a very large shop) can extend its own deadline through
// every wrapper of the stack.
func TestHandlerCanExtendItsWriteDeadline(t *testing.T) {
	errs := make(chan error, 1)
	e := newEnv(t, func(r *mux.Router) {
		httpapi.HandleFunc(r, httpapi.Beta, http.MethodGet, "/long", func(w http.ResponseWriter, req *http.Request) {
			errs <- http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Hour))
			w.WriteHeader(http.StatusNoContent)
		})
	})
	e.do(t, http.MethodGet, "/long", "")
	if err := <-errs; err != nil {
		t.Fatalf("SetWriteDeadline through the stack: %v", err)
	}
}
