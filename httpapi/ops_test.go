package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cgp-platform/cgp/httpapi"
)

func opsEnv(t *testing.T, checks *httpapi.Checks) *env {
	t.Helper()
	reg := prometheus.NewRegistry()
	return newEnv(t, func(r *mux.Router) { httpapi.RegisterOps(r, checks, reg) }, withRegistry(reg))
}

func TestHealthz(t *testing.T) {
	e := opsEnv(t, nil)
	r := e.do(t, http.MethodGet, "/healthz", "")
	if r.status != 200 || string(r.body) != `{"status":"ok"}` || r.header.Get("X-Service-Stability") != "beta" {
		t.Fatalf("healthz: %d %s %v", r.status, r.body, r.header)
	}
}

func TestReadyz(t *testing.T) {
	checks := httpapi.NewChecks(200 * time.Millisecond)
	var failVault atomic.Bool
	checks.Add("eventlog", func(context.Context) error { return nil })
	checks.Add("vault", func(context.Context) error {
		if failVault.Load() {
			return errors.New("dial tcp 10.1.2.3:5432: connection refused")
		}
		return nil
	})
	e := opsEnv(t, checks)

	if r := e.do(t, http.MethodGet, "/readyz", ""); r.status != 200 || string(r.body) != `{"status":"ok"}` {
		t.Fatalf("all pass: %d %s", r.status, r.body)
	}

	failVault.Store(true)
	r := e.do(t, http.MethodGet, "/readyz", "")
	if r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Fatalf("one failing: %d %v", r.status, r.header)
	}
	doc := errorOf(t, r)
	if doc.Error.Code != "unavailable" {
		t.Errorf("code %q", doc.Error.Code)
	}
	if got, _ := doc.Error.Details["failing_checks"].([]any); len(got) != 1 || got[0] != "vault" {
		t.Errorf("failing_checks = %v", doc.Error.Details["failing_checks"])
	}
	if strings.Contains(string(r.body), "10.1.2.3") {
		t.Error("check error leaked to the client")
	}
	e.logs.wait(t, "check failure logged", func(l map[string]any) bool {
		return l["check"] == "vault" && strings.Contains(l["error"].(string), "connection refused")
	})
}

func TestReadyzHangingAndPanickingChecks(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	checks := httpapi.NewChecks(100 * time.Millisecond)
	checks.Add("ignores-ctx", func(context.Context) error { <-release; return nil })
	checks.Add("honours-ctx", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	checks.Add("panics", func(context.Context) error { panic("boom") })
	checks.Add("fine", func(context.Context) error { return nil })
	e := opsEnv(t, checks)

	start := time.Now()
	r := e.do(t, http.MethodGet, "/readyz", "")
	if r.status != 503 {
		t.Fatalf("status %d", r.status)
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("readyz took %v with a 100ms timeout", elapsed)
	}
	got, _ := errorOf(t, r).Error.Details["failing_checks"].([]any)
	want := []any{"ignores-ctx", "honours-ctx", "panics"}
	if len(got) != len(want) {
		t.Fatalf("failing_checks = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("failing_checks = %v, want %v", got, want)
		}
	}
}

func TestMetricsEndpointUsesGivenRegistry(t *testing.T) {
	e := opsEnv(t, nil)
	id := e.do(t, http.MethodGet, "/healthz", "").header.Get("X-Request-Id")
	e.logs.accessLine(t, id)
	r := e.do(t, http.MethodGet, "/metrics", "")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %v", r.status, r.header)
	}
	body := string(r.body)
	if !strings.Contains(body, `cgp_http_requests_total{method="GET",route="/healthz",status="200"} 1`) {
		t.Errorf("request counter missing:\n%s", body)
	}
	if strings.Contains(body, "go_goroutines") {
		t.Error("the global registry's collectors leaked into /metrics")
	}
}

func TestRegisterOpsWithoutRegistry(t *testing.T) {
	e := newEnv(t, func(r *mux.Router) { httpapi.RegisterOps(r, nil, nil) })
	if r := e.do(t, http.MethodGet, "/metrics", ""); r.status != 404 {
		t.Fatalf("metrics without a registry: %d", r.status)
	}
	if r := e.do(t, http.MethodGet, "/healthz", ""); r.status != 200 || r.header.Get("X-Service-Stability") != "beta" {
		t.Fatalf("healthz: %d", r.status)
	}
}
