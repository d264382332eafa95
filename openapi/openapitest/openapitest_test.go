package openapitest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/openapi"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// recorder is a testing.TB that records failures instead of failing, so a
// test can assert that a check catches a mistake.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func (r *recorder) has(t *testing.T, substr string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.errors {
		if strings.Contains(e, substr) {
			return
		}
	}
	t.Errorf("no failure mentions %q; failures: %q", substr, r.errors)
}

// customerAttrs is the documented customer.
type customerAttrs struct {
	Email            *string    `json:"email"`
	FirstName        *string    `json:"first_name"`
	LastName         *string    `json:"last_name"`
	Phone            *string    `json:"phone"`
	LifecycleStage   string     `json:"lifecycle_stage"`
	TotalSpent       float64    `json:"total_spent"`
	OrdersCount      int        `json:"orders_count"`
	LastOrderAt      *time.Time `json:"last_order_at"`
	Tags             []string   `json:"tags"`
	AcceptsMarketing bool       `json:"accepts_marketing"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	Redacted         bool       `json:"redacted"`
}

func customer(id string, erased bool) httpapi.Resource {
	email, first := "jane@example.com", "Jane"
	last := time.Date(2026, 4, 30, 18, 0, 0, 0, time.UTC)
	a := customerAttrs{Email: &email, FirstName: &first, LifecycleStage: "loyal", TotalSpent: 120.5, OrdersCount: 3,
		LastOrderAt: &last, Tags: []string{"vip"}, AcceptsMarketing: true,
		CreatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: last}
	if erased {
		a = customerAttrs{LifecycleStage: "churned", Tags: []string{}, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, Redacted: true}
	}
	return httpapi.Resource{ID: id, Type: "customer", Attributes: a,
		Relationships: map[string]httpapi.Relationship{"orders": httpapi.RelatedLink("/api/v1/customers/" + id + "/orders")}}
}

// app serves every documented operation with the httpapi skeleton, the way
// the real handlers will; mutate lets a test break one answer.
type app struct {
	router *mux.Router
	srv    *httptest.Server
	v      *openapitest.Validator // nil: the package-level ValidateResponse
}

type mutation func(w http.ResponseWriter, r *http.Request) bool

func newApp(t *testing.T, mutate mutation, skip ...string) *app {
	t.Helper()
	codec, err := httpapi.NewCursorCodec(bytes.Repeat([]byte{5}, 32))
	if err != nil {
		t.Fatal(err)
	}
	spec := httpapi.ListSpec{
		Resource:    "customers",
		Filters:     map[string]httpapi.FilterKind{"lifecycle_stage": httpapi.EnumFilter("prospect", "new", "active", "loyal", "at_risk", "churned")},
		Sorts:       []string{"last_order_at", "created_at", "total_spent"},
		DefaultSort: "-created_at",
	}
	wrap := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if mutate != nil && mutate(w, r) {
				return
			}
			if r.Header.Get("X-Test-Unavailable") != "" {
				httpapi.WriteError(w, r, httpapi.Unavailable(2*time.Second))
				return
			}
			h(w, r)
		}
	}
	auth := func(scope string, h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			switch r.Header.Get("Authorization") {
			case "":
				httpapi.WriteError(w, r, httpapi.AuthenticationRequired())
			case "Bearer no-scope":
				httpapi.WriteError(w, r, httpapi.ScopeRequired(scope))
			case "Bearer limited":
				httpapi.WriteError(w, r, httpapi.RateLimited(3*time.Second))
			default:
				w.Header().Set("X-RateLimit-Limit", "600")
				w.Header().Set("X-RateLimit-Remaining", "599")
				w.Header().Set("X-RateLimit-Reset", "1777777777")
				h(w, r)
			}
		}
	}
	skipped := func(op string) bool {
		for _, s := range skip {
			if s == op {
				return true
			}
		}
		return false
	}
	r := httpapi.NewRouter()
	checks := httpapi.NewChecks(time.Second)
	checks.Add("eventlog", func(ctx context.Context) error {
		if v, _ := ctx.Value(failKey{}).(bool); v {
			return fmt.Errorf("down")
		}
		return nil
	})
	reg := prometheus.NewRegistry()
	httpapi.RegisterOps(r, checks, reg)
	httpapi.Handle(r, httpapi.Beta, http.MethodGet, "/api/v1/openapi.json", openapi.Handler())
	if !skipped("GET /api/v1/customers") {
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodGet, "/api/v1/customers", wrap(auth("customers:read", func(w http.ResponseWriter, req *http.Request) {
			p, err := httpapi.ParseList(req, spec, codec)
			if err != nil {
				httpapi.WriteError(w, req, err)
				return
			}
			next, _ := p.NextCursor(map[string]string{"i": "cus_2"})
			httpapi.WriteList(w, req, []httpapi.Resource{customer("cus_1", false), customer("cus_2", true)},
				httpapi.Page{NextCursor: next, HasNext: true})
		})))
	}
	httpapi.HandleFunc(r, httpapi.Stable, http.MethodGet, "/api/v1/customers/{customer_id}", wrap(auth("customers:read", func(w http.ResponseWriter, req *http.Request) {
		id := mux.Vars(req)["customer_id"]
		if id == "cus_missing" {
			httpapi.WriteError(w, req, httpapi.NotFound("customer"))
			return
		}
		httpapi.WriteResource(w, req, http.StatusOK, customer(id, id == "cus_erased"))
	})))
	if !skipped("PATCH /api/v1/customers/{customer_id}") {
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodPatch, "/api/v1/customers/{customer_id}", wrap(auth("customers:write", func(w http.ResponseWriter, req *http.Request) {
			var in struct {
				Tags []string `json:"tags"`
			}
			if err := httpapi.DecodeData(w, req, 1024, &in); err != nil {
				httpapi.WriteError(w, req, err)
				return
			}
			c := customer(mux.Vars(req)["customer_id"], false)
			a := c.Attributes.(customerAttrs)
			a.Tags = in.Tags
			c.Attributes = a
			httpapi.WriteResource(w, req, http.StatusOK, c)
		})))
	}
	httpapi.HandleFunc(r, httpapi.Stable, http.MethodPost, "/webhooks/events", wrap(func(w http.ResponseWriter, req *http.Request) {
		switch req.Header.Get("X-Commerce-Hmac-Sha256") {
		case "":
			httpapi.WriteError(w, req, httpapi.SignatureRequired("X-Commerce-Hmac-Sha256"))
		case "good":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"status":"accepted"}`)
		default:
			httpapi.WriteError(w, req, httpapi.InvalidSignature())
		}
	}))

	// Operations this fixture does not exercise get a bare route, so the
	// route set agrees with the document as it grows.
	for path, item := range openapitest.Document(t).Paths.Map() {
		for method := range item.Operations() {
			probe := &mux.RouteMatch{}
			req := httptest.NewRequest(method, strings.NewReplacer("{customer_id}", "cus_x", "{id}", "tok_x").Replace(path), nil)
			// Served already by this very template (another template may
			// match the path too: /reviews/{id} matches /reviews/settings).
			if skipped(method+" "+path) || r.Match(req, probe) && probe.MatchErr == nil && routeTemplate(probe.Route) == path {
				continue
			}
			httpapi.HandleFunc(r, httpapi.Stable, method, path, func(w http.ResponseWriter, req *http.Request) {
				w.WriteHeader(http.StatusNotImplemented)
			})
		}
	}

	stack, err := httpapi.NewStack(httpapi.StackConfig{Logger: zerolog.Nop(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	h := stack.Wrap(r)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("X-Test-Not-Ready") != "" {
			req = req.WithContext(context.WithValue(req.Context(), failKey{}, true))
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return &app{router: r, srv: srv}
}

type failKey struct{}

// routeTemplate is a route's path template without variable patterns.
func routeTemplate(r *mux.Route) string {
	tpl, err := r.GetPathTemplate()
	if err != nil {
		return ""
	}
	return regexp.MustCompile(`\{([^{}:]+)(:[^{}]*)?\}`).ReplaceAllString(tpl, "{$1}")
}

// call makes a request and validates its response with tb.
func (a *app) call(t *testing.T, tb testing.TB, method, path, body string, header ...string) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if a.v != nil {
		a.v.ValidateResponse(tb, req, resp, b)
	} else {
		openapitest.ValidateResponse(tb, req, resp, b)
	}
	return resp.StatusCode
}

func TestDocumentLoads(t *testing.T) {
	if doc := openapitest.Document(t); doc == nil || !doc.IsOpenAPI31OrLater() {
		t.Fatal("document is not OpenAPI 3.1")
	}
}

func TestCheckRoutesAgreesWithTheApp(t *testing.T) {
	openapitest.CheckRoutes(t, newApp(t, nil).router)
}

func TestCheckRoutesCatchesMissingAndUndocumentedRoutes(t *testing.T) {
	a := newApp(t, nil, "PATCH /api/v1/customers/{customer_id}")
	httpapi.HandleFunc(a.router, httpapi.Beta, http.MethodGet, "/api/v1/secret", func(http.ResponseWriter, *http.Request) {})
	a.router.HandleFunc("/anything", func(http.ResponseWriter, *http.Request) {})
	rec := &recorder{TB: t}
	openapitest.CheckRoutes(rec, a.router)
	rec.has(t, "documents PATCH /api/v1/customers/{customer_id} but no route serves it")
	rec.has(t, "route GET /api/v1/secret is not in openapi.yaml")
	rec.has(t, "route /anything accepts every method")
	if len(rec.errors) != 3 {
		t.Errorf("failures = %q, want 3", rec.errors)
	}

	rec = &recorder{TB: t}
	openapitest.CheckRoutes(rec, a.router,
		openapitest.IgnoreRoute(http.MethodPatch, "/api/v1/customers/{customer_id}"),
		openapitest.IgnoreRoute(http.MethodGet, "/api/v1/secret"),
		openapitest.IgnoreRoute("", "/anything"))
	if len(rec.errors) != 0 {
		t.Errorf("ignored routes still reported: %q", rec.errors)
	}
}

func TestCheckRoutesNormalizesPatterns(t *testing.T) {
	a := newApp(t, nil, "PATCH /api/v1/customers/{customer_id}")
	httpapi.HandleFunc(a.router, httpapi.Stable, http.MethodPatch, "/api/v1/customers/{customer_id:cus_[0-9A-Za-z]{1,64}}", func(http.ResponseWriter, *http.Request) {})
	openapitest.CheckRoutes(t, a.router)

	b := newApp(t, nil, "GET /api/v1/customers")
	httpapi.HandleFunc(b.router, httpapi.Stable, http.MethodGet, "/api/v1/customers/{id}/x", func(http.ResponseWriter, *http.Request) {})
	rec := &recorder{TB: t}
	openapitest.CheckRoutes(rec, b.router)
	rec.has(t, "documents GET /api/v1/customers but no route serves it")
	rec.has(t, "route GET /api/v1/customers/{id}/x is not in openapi.yaml")
}

// TestRealResponsesMatchTheDocument drives every documented operation,
// successes and errors, through the real skeleton and validates each answer.
func TestRealResponsesMatchTheDocument(t *testing.T) {
	a := newApp(t, nil)
	a.v = openapitest.NewValidator(t)
	tok := []string{"Authorization", "Bearer copt_test_x"}
	json := "application/json"
	calls := []struct {
		method, path, body string
		header             []string
		status             int
	}{
		{"GET", "/healthz", "", nil, 200},
		{"GET", "/readyz", "", nil, 200},
		{"GET", "/readyz", "", []string{"X-Test-Not-Ready", "1"}, 503},
		{"GET", "/metrics", "", nil, 200},
		{"GET", "/api/v1/openapi.json", "", nil, 200},
		{"GET", "/api/v1/customers", "", tok, 200},
		{"GET", "/api/v1/customers?limit=2&sort=-total_spent&filter[lifecycle_stage]=loyal", "", tok, 200},
		{"GET", "/api/v1/customers?limit=500", "", tok, 400},
		{"GET", "/api/v1/customers?filter[email]=x", "", tok, 400},
		{"GET", "/api/v1/customers?cursor=forged", "", tok, 400},
		{"GET", "/api/v1/customers", "", nil, 401},
		{"GET", "/api/v1/customers", "", []string{"Authorization", "Bearer no-scope"}, 403},
		{"GET", "/api/v1/customers", "", []string{"Authorization", "Bearer limited"}, 429},
		{"GET", "/api/v1/customers", "", append([]string{"X-Test-Unavailable", "1"}, tok...), 503},
		{"GET", "/api/v1/customers/cus_1", "", tok, 200},
		{"GET", "/api/v1/customers/cus_erased", "", tok, 200},
		{"GET", "/api/v1/customers/cus_missing", "", tok, 404},
		{"PATCH", "/api/v1/customers/cus_1", `{"data":{"attributes":{"tags":["vip","b2b"]}}}`, append([]string{"Content-Type", json}, tok...), 200},
		{"PATCH", "/api/v1/customers/cus_1", `{"data":{"attributes":{"tags":"vip"}}}`, append([]string{"Content-Type", json}, tok...), 422},
		{"PATCH", "/api/v1/customers/cus_1", `{"data":{"attributes":`, append([]string{"Content-Type", json}, tok...), 400},
		{"PATCH", "/api/v1/customers/cus_1", `{"data":{"attributes":{}}}`, append([]string{"Content-Type", "text/plain"}, tok...), 415},
		{"PATCH", "/api/v1/customers/cus_1", `{"data":{"attributes":{"tags":["` + strings.Repeat("x", 2000) + `"]}}}`, append([]string{"Content-Type", json}, tok...), 413},
		{"POST", "/webhooks/events", `{"id":1}`, []string{"Content-Type", json, "X-Commerce-Hmac-Sha256", "good"}, 200},
		{"POST", "/webhooks/events", `{"id":1}`, []string{"Content-Type", json}, 400},
		{"POST", "/webhooks/events", `{"id":1}`, []string{"Content-Type", json, "X-Commerce-Hmac-Sha256", "bad"}, 401},
		{"DELETE", "/api/v1/customers/cus_1", "", tok, 405},
		{"GET", "/api/v1/nowhere", "", tok, 404},
	}
	for _, c := range calls {
		if got := a.call(t, t, c.method, c.path, c.body, c.header...); got != c.status {
			t.Errorf("%s %s: status %d, want %d", c.method, c.path, got, c.status)
		}
	}
}

func TestValidateResponseCatchesWrongResponses(t *testing.T) {
	tok := []string{"Authorization", "Bearer copt_test_x"}
	cases := []struct {
		name   string
		mutate mutation
		want   string
	}{
		{"enum value not in the document", func(w http.ResponseWriter, r *http.Request) bool {
			c := customer("cus_1", false)
			a := c.Attributes.(customerAttrs)
			a.LifecycleStage = "vip"
			c.Attributes = a
			httpapi.WriteResource(w, r, 200, c)
			return true
		}, "does not match openapi.yaml"},
		{"missing relationships", func(w http.ResponseWriter, r *http.Request) bool {
			c := customer("cus_1", false)
			c.Relationships = nil
			httpapi.WriteResource(w, r, 200, c)
			return true
		}, "does not match openapi.yaml"},
		{"number where a string or null belongs", func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":{"id":"cus_1","type":"customer","attributes":{"email":42}}}`)
			return true
		}, "does not match openapi.yaml"},
		{"undocumented status", func(w http.ResponseWriter, r *http.Request) bool {
			httpapi.WriteError(w, r, httpapi.CreditsExhausted(0, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
			return true
		}, "status is not supported"},
		{"error without the envelope", func(w http.ResponseWriter, r *http.Request) bool {
			http.Error(w, `{"message":"nope"}`, http.StatusNotFound)
			return true
		}, "does not match openapi.yaml"},
		{"wrong stability", func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("X-Service-Stability", "beta")
			return false
		}, `X-Service-Stability = "beta"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := newApp(t, c.mutate)
			rec := &recorder{TB: t}
			a.call(t, rec, http.MethodGet, "/api/v1/customers/cus_1", "", tok...)
			rec.has(t, c.want)
		})
	}
	t.Run("missing required header", func(t *testing.T) {
		a := newApp(t, nil)
		rec := &recorder{TB: t}
		req, _ := http.NewRequest(http.MethodGet, a.srv.URL+"/healthz", nil)
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}}
		openapitest.ValidateResponse(rec, req, resp, []byte(`{"status":"ok"}`))
		rec.has(t, "X-Request-Id")
	})
	t.Run("undocumented path answered 200", func(t *testing.T) {
		rec := &recorder{TB: t}
		req, _ := http.NewRequest(http.MethodGet, "http://x/api/v1/nowhere", nil)
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}}
		openapitest.ValidateResponse(rec, req, resp, []byte(`{}`))
		rec.has(t, "the document has no such operation")
	})
}
