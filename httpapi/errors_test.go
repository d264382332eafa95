package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
)

// failing serves err through WriteError at GET /fail.
func failing(err error) func(r *mux.Router) {
	return func(r *mux.Router) {
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodGet, "/fail", func(w http.ResponseWriter, req *http.Request) {
			httpapi.WriteError(w, req, err)
		})
	}
}

func TestConstructorsMatchDesignTable(t *testing.T) {
	cases := []struct {
		err        *httpapi.Error
		status     int
		code       string
		details    map[string]any
		retryAfter string
	}{
		{httpapi.AuthenticationRequired(), 401, "authentication_required", nil, ""},
		{httpapi.InvalidToken(), 401, "invalid_token", nil, ""},
		{httpapi.PlanRequired(), 403, "plan_required", nil, ""},
		{httpapi.ScopeRequired("customers:write"), 403, "scope_required", map[string]any{"required_scope": "customers:write"}, ""},
		{httpapi.ValidationFailed("audience_id", "is required"), 422, "validation_failed", map[string]any{"field": "audience_id"}, ""},
		{httpapi.InvalidParameter("limit", "too big"), 400, "invalid_parameter", map[string]any{"field": "limit"}, ""},
		{httpapi.InvalidCursor(), 400, "invalid_cursor", nil, ""},
		{httpapi.InvalidJSON(), 400, "invalid_json", nil, ""},
		{httpapi.NotFound("customer"), 404, "not_found", nil, ""},
		{httpapi.IdempotencyKeyReused(), 409, "idempotency_key_reused", nil, ""},
		{httpapi.IdempotencyKeyInUse(), 409, "idempotency_key_in_use", nil, ""},
		{httpapi.RateLimited(1500 * time.Millisecond), 429, "rate_limited", nil, "2"},
		{httpapi.TooManyFailedAttempts(30 * time.Second), 429, "too_many_failed_attempts", nil, "30"},
		{httpapi.IPBlocked(time.Hour), 429, "ip_blocked", nil, "3600"},
		{httpapi.CreditsExhausted(3, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)), 402, "credits_exhausted",
			map[string]any{"remaining": float64(3), "resets_at": "2026-12-01T00:00:00Z"}, ""},
		{httpapi.Unavailable(0), 503, "unavailable", nil, "5"},
		{httpapi.PayloadTooLarge(1024), 413, "payload_too_large", map[string]any{"max_bytes": float64(1024)}, ""},
		{httpapi.MethodNotAllowed(), 405, "method_not_allowed", nil, ""},
		{httpapi.UnsupportedMediaType(), 415, "unsupported_media_type", nil, ""},
		{httpapi.SignatureRequired("X-Commerce-Hmac-Sha256"), 400, "signature_required", map[string]any{"field": "X-Commerce-Hmac-Sha256"}, ""},
		{httpapi.InvalidSignature(), 401, "invalid_signature", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			e := newEnv(t, failing(fmt.Errorf("handler: %w", c.err)))
			r := e.do(t, http.MethodGet, "/fail", "")
			if r.status != c.status {
				t.Fatalf("status = %d, want %d", r.status, c.status)
			}
			doc := errorOf(t, r)
			if doc.Error.Code != c.code {
				t.Errorf("code = %q, want %q", doc.Error.Code, c.code)
			}
			if doc.Error.Message == "" {
				t.Error("empty message")
			}
			for k, v := range c.details {
				if doc.Error.Details[k] != v {
					t.Errorf("details.%s = %v, want %v", k, doc.Error.Details[k], v)
				}
			}
			if got := r.header.Get("Retry-After"); got != c.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, c.retryAfter)
			}
			if got := r.header.Get("X-Service-Stability"); got != "stable" {
				t.Errorf("X-Service-Stability = %q on an error of a stable route", got)
			}
			if c.status == 401 && c.code != "invalid_signature" && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q", r.header.Get("WWW-Authenticate"))
			}
		})
	}
}

func TestScopeRequiredMessageNamesScope(t *testing.T) {
	if e := httpapi.ScopeRequired("images:write"); !strings.Contains(e.Message, "images:write") {
		t.Fatalf("message %q does not name the scope", e.Message)
	}
}

func TestWriteErrorMapsDomainAndLogErrors(t *testing.T) {
	cases := []struct {
		name       string
		err        error
		status     int
		code       string
		field      string
		retryAfter bool
	}{
		{"invalid", fmt.Errorf("patch: %w", domain.Invalid("tags", "at most 250 tags")), 422, "validation_failed", "tags", false},
		{"not found", fmt.Errorf("load: %w", domain.NotFound("customer")), 404, "not_found", "", false},
		{"conflict", domain.Conflict("campaign already launched"), 409, "conflict", "", false},
		{"forbidden", domain.Forbidden("not your shop"), 403, "forbidden", "", false},
		{"domain unavailable", &domain.Error{Code: domain.CodeUnavailable, Message: "x"}, 503, "unavailable", "", true},
		{"credits exhausted", fmt.Errorf("reserve: %w", domain.CreditsExhausted(2, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))), 402, "credits_exhausted", "", false},
		{"log unavailable", fmt.Errorf("append: %w", fmt.Errorf("sqlite: %w", eventlog.ErrUnavailable)), 503, "unavailable", "", true},
		{"wrong revision", fmt.Errorf("append: %w", &eventlog.WrongRevisionError{Stream: "customer-cus_1"}), 409, "conflict", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, failing(c.err))
			r := e.do(t, http.MethodGet, "/fail", "")
			if r.status != c.status {
				t.Fatalf("status = %d, want %d (%s)", r.status, c.status, r.body)
			}
			doc := errorOf(t, r)
			if doc.Error.Code != c.code {
				t.Errorf("code = %q, want %q", doc.Error.Code, c.code)
			}
			if c.field != "" && doc.Error.Details["field"] != c.field {
				t.Errorf("details.field = %v, want %q", doc.Error.Details["field"], c.field)
			}
			if c.code == "credits_exhausted" && (doc.Error.Details["remaining"] != float64(2) || doc.Error.Details["resets_at"] != "2026-12-01T00:00:00Z") {
				t.Errorf("details = %v, want remaining 2 and resets_at 2026-12-01T00:00:00Z", doc.Error.Details)
			}
			if got := r.header.Get("Retry-After") != ""; got != c.retryAfter {
				t.Errorf("Retry-After present = %v, want %v", got, c.retryAfter)
			}
		})
	}
}

func TestWriteErrorHidesInternalDetail(t *testing.T) {
	secret := "pq: connection to db-7 failed for jane@example.com"
	e := newEnv(t, failing(fmt.Errorf("load customer: %w", errors.New(secret))))
	r := e.do(t, http.MethodGet, "/fail", "")
	if r.status != 500 {
		t.Fatalf("status = %d", r.status)
	}
	doc := errorOf(t, r)
	if doc.Error.Code != "internal_error" {
		t.Errorf("code = %q", doc.Error.Code)
	}
	if strings.Contains(string(r.body), "db-7") || strings.Contains(string(r.body), "jane") {
		t.Errorf("internal detail leaked: %s", r.body)
	}
	line := e.logs.wait(t, "internal error", func(l map[string]any) bool {
		return l["level"] == "error" && l["request_id"] == doc.Error.RequestID
	})
	if !strings.Contains(fmt.Sprint(line["error"]), "db-7") {
		t.Errorf("the log line lacks the detail: %v", line)
	}
}

func TestWriteErrorOutsideStackStillHasRequestID(t *testing.T) {
	rec := httptest.NewRecorder()
	httpapi.WriteError(rec, httptest.NewRequest(http.MethodGet, "/x", nil), httpapi.NotFound("customer"))
	r := response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	if r.status != 404 {
		t.Fatalf("status %d", r.status)
	}
	errorOf(t, r)
}

func TestWriteErrorClientGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/x", nil).WithContext(ctx)
	httpapi.WriteError(rec, req, fmt.Errorf("query: %w", ctx.Err()))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status = %d, want 503 for a cancelled request", rec.Code)
	}
}

func TestUnknownRouteAndWrongMethod(t *testing.T) {
	e := newEnv(t, func(r *mux.Router) {
		api := r.PathPrefix("/api/v1").Subrouter()
		ok := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }
		httpapi.HandleFunc(api, httpapi.Stable, http.MethodGet, "/customers/{customer_id}", ok)
		httpapi.HandleFunc(api, httpapi.Stable, http.MethodPatch, "/customers/{customer_id}", ok)
	})
	r := e.do(t, http.MethodGet, "/api/v1/nothing", "")
	if r.status != 404 || errorOf(t, r).Error.Code != "not_found" {
		t.Errorf("unknown route: %d %s", r.status, r.body)
	}
	r = e.do(t, http.MethodDelete, "/api/v1/customers/cus_1", "")
	if r.status != 405 || errorOf(t, r).Error.Code != "method_not_allowed" {
		t.Errorf("wrong method: %d %s", r.status, r.body)
	}
	if got := r.header.Get("Allow"); got != "GET, PATCH" {
		t.Errorf("Allow = %q, want GET, PATCH", got)
	}
	if r := e.do(t, http.MethodGet, "/api/v1/customers/cus_1", ""); r.status != 204 {
		t.Errorf("known route: %d", r.status)
	}
}
