package openapitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/openapi"
)

// StabilityExtension is the operation extension naming the stability that
// X-Service-Stability must carry.
const StabilityExtension = "x-service-stability"

// Document loads the embedded document and validates it (examples included),
// failing t and returning nil when it does not.
func Document(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := load()
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
		return nil
	}
	return doc
}

// loaded is the document, parsed and validated once per test binary: the
// parse of the whole YAML document takes seconds under the race detector,
// and the end-to-end tests ask for it about a hundred times. Callers only
// read it.
var loaded struct {
	once sync.Once
	doc  *openapi3.T
	err  error
}

func load() (*openapi3.T, error) {
	loaded.once.Do(func() { loaded.doc, loaded.err = parse() })
	return loaded.doc, loaded.err
}

func parse() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.YAML())
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableMultiError()); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	return doc, nil
}

// Option tunes CheckRoutes.
type Option func(*checkOptions)

type checkOptions struct {
	ignored []operation
}

type operation struct{ method, path string }

func (o operation) String() string { return o.method + " " + o.path }

// IgnoreRoute leaves method and path (a template as written in the router
// or the document; method "" for every method) out of CheckRoutes, e.g. a
// route that is deliberately undocumented.
func IgnoreRoute(method, path string) Option {
	return func(o *checkOptions) {
		o.ignored = append(o.ignored, operation{strings.ToUpper(method), normalizeTemplate(path)})
	}
}

func (o *checkOptions) isIgnored(op operation) bool {
	for _, ig := range o.ignored {
		if ig.path == op.path && (ig.method == "" || ig.method == op.method) {
			return true
		}
	}
	return false
}

// muxVariable matches {name} and {name:pattern} in a mux path template.
var muxVariable = regexp.MustCompile(`\{([^{}:]+)(:[^{}]*(\{[^{}]*\}[^{}]*)*)?\}`)

// normalizeTemplate drops mux variable patterns: {id:[0-9]+} → {id}.
func normalizeTemplate(path string) string {
	return muxVariable.ReplaceAllString(path, "{$1}")
}

// CheckRoutes fails t for every route of router (path template and method)
// that the document does not describe, for every documented path and method
// no route serves, and for every route that accepts any method (register
// routes with a method). Path parameters must have the same names in both.
func CheckRoutes(t testing.TB, router *mux.Router, opts ...Option) {
	t.Helper()
	var o checkOptions
	for _, opt := range opts {
		opt(&o)
	}
	doc := Document(t)
	if doc == nil {
		return
	}

	routed := map[operation]bool{}
	err := router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return nil // a route without a path (host or header matchers only)
		}
		tpl = normalizeTemplate(tpl)
		methods, err := route.GetMethods()
		if err != nil {
			if route.GetHandler() != nil && !o.isIgnored(operation{"", tpl}) {
				t.Errorf("route %s accepts every method: register it with a method", tpl)
			}
			return nil
		}
		for _, m := range methods {
			routed[operation{strings.ToUpper(m), tpl}] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk routes: %v", err)
		return
	}

	documented := map[operation]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[operation{strings.ToUpper(method), path}] = true
		}
	}

	for _, op := range sortedOps(routed) {
		if !documented[op] && !o.isIgnored(op) {
			t.Errorf("route %s is not in openapi.yaml", op)
		}
	}
	for _, op := range sortedOps(documented) {
		if !routed[op] && !o.isIgnored(op) {
			t.Errorf("openapi.yaml documents %s but no route serves it", op)
		}
	}
}

func sortedOps(set map[operation]bool) []operation {
	ops := make([]operation, 0, len(set))
	for op := range set {
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b operation) int { return strings.Compare(a.String(), b.String()) })
	return ops
}

// ValidateResponse fails t when resp (to req, whose body was read into body)
// does not match the document: an undocumented status, a missing or invalid
// required header, a body that breaks the schema, or an X-Service-Stability
// other than the operation's x-service-stability. A 405 on a documented path
// and a 404 on an undocumented one are checked against the error envelope.
// A gzip-encoded body is not decoded: let the client decompress it.
//
// It loads the document on every call; a suite validating many responses
// can load it once with NewValidator.
func ValidateResponse(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if v := NewValidator(t); v != nil {
		v.ValidateResponse(t, req, resp, body)
	}
}

// Validator validates responses against the document loaded once. It is
// safe for concurrent use (validations are serialized).
type Validator struct {
	mu     sync.Mutex
	doc    *openapi3.T
	router routers.Router
}

// NewValidator loads the document, failing t and returning nil when it does
// not load or validate.
func NewValidator(t testing.TB) *Validator {
	t.Helper()
	shared.once.Do(func() {
		doc, err := load()
		if err != nil {
			shared.err = err
			return
		}
		// A copy without servers, to match any host (tests run on random
		// ports), so the shared document stays as written.
		cp := *doc
		cp.Servers = nil
		router, err := gorillamux.NewRouter(&cp)
		if err != nil {
			shared.err = fmt.Errorf("openapi router: %w", err)
			return
		}
		shared.v = &Validator{doc: &cp, router: router}
	})
	if shared.err != nil {
		t.Fatalf("openapi.yaml: %v", shared.err)
		return nil
	}
	return shared.v
}

// shared is the one Validator of a test binary (its mutex serialises the
// validations of every test).
var shared struct {
	once sync.Once
	v    *Validator
	err  error
}

// ValidateResponse is the package-level ValidateResponse on the loaded
// document.
func (v *Validator) ValidateResponse(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	what := fmt.Sprintf("%s %s → %d", req.Method, req.URL.Path, resp.StatusCode)
	route, pathParams, err := v.router.FindRoute(req)
	switch {
	case errors.Is(err, routers.ErrMethodNotAllowed):
		checkBareError(t, v.doc, what, resp, body, http.StatusMethodNotAllowed)
		return
	case errors.Is(err, routers.ErrPathNotFound):
		checkBareError(t, v.doc, what, resp, body, http.StatusNotFound)
		return
	case err != nil:
		t.Errorf("%s: find the operation: %v", what, err)
		return
	}

	options := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: pathParams, Route: route, Options: options,
		},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Options: options,
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		t.Errorf("%s does not match openapi.yaml: %v\nbody: %s", what, err, clip(body))
	}

	want, _ := route.Operation.Extensions[StabilityExtension].(string)
	if want == "" {
		t.Errorf("%s: operation %s has no %s", what, route.Operation.OperationID, StabilityExtension)
	} else if resp.StatusCode != http.StatusNotModified {
		if got := resp.Header.Get("X-Service-Stability"); got != want {
			t.Errorf("%s: X-Service-Stability = %q, operation %s is %q", what, got, route.Operation.OperationID, want)
		}
	}
}

// checkBareError checks a response outside any documented operation: it
// must have the expected status and the error envelope.
func checkBareError(t testing.TB, doc *openapi3.T, what string, resp *http.Response, body []byte, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("%s: the document has no such operation (expected a %d)", what, status)
		return
	}
	schema := doc.Components.Schemas["ErrorEnvelope"]
	if schema == nil {
		t.Errorf("%s: the document has no ErrorEnvelope schema", what)
		return
	}
	var decoded any
	if err := json.Unmarshal(body, &decoded); err != nil {
		t.Errorf("%s: body is not JSON: %v", what, err)
		return
	}
	if err := schema.Value.VisitJSON(decoded, openapi3.EnableJSONSchema2020()); err != nil {
		t.Errorf("%s: not the error envelope: %v\nbody: %s", what, err, clip(body))
	}
	if id := resp.Header.Get("X-Request-Id"); !strings.HasPrefix(id, "req_") {
		t.Errorf("%s: X-Request-Id = %q", what, id)
	}
}

func clip(b []byte) string {
	const max = 2000
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// The HTML pages (the unsubscribe confirmation, the admin interface) and
// the admin stylesheet are validated as strings: their status and headers
// are checked like any answer's.
func init() {
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/css", openapi3filter.PlainBodyDecoder)
}
