package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/projections/tenancy"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

func TestScopesUpdateReceiver(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "scopes.example.com", "agency", "*")
	waitForToken(t, s, tn)
	body := []byte(`{"id":660136149,"previous":["read_products"],"current":["write_customers","read_orders","write_products"],"updated_at":"2026-11-01T10:00:00Z"}`)
	h := webhookHeaders(tn, "app/scopes_update", "dlv-scopes-1", body)
	r := do(t, "POST", s.base+"/webhooks/app/scopes_update", body, h)
	v.ValidateResponse(t, r.req, r.resp, r.body)
	if r.status != 200 {
		t.Fatalf("scopes update: %d %s", r.status, r.body)
	}
	// A later update (TestWebhookTopicOnTheWrongReceiver: at
	// /webhooks/events it is refused).
	later := []byte(`{"id":660136149,"previous":["write_customers"],"current":["write_customers","read_orders","write_products","read_themes"],"updated_at":"2026-11-02T10:00:00Z"}`)
	second := do(t, "POST", s.base+"/webhooks/app/scopes_update", later, webhookHeaders(tn, "app/scopes_update", "dlv-scopes-2", later))
	if second.status != 200 {
		t.Fatalf("second scopes update: %d %s", second.status, second.body)
	}
	// Let the tenancy read model reach it before the server stops.
	if r := s.get(t, "/api/v1/usage", tn.token, "X-Wait-For-Position", second.position(t)); r.status != 200 {
		t.Fatalf("wait: %d", r.status)
	}
	// A repeat appends nothing.
	if r := do(t, "POST", s.base+"/webhooks/app/scopes_update", body, h); r.status != 200 {
		t.Fatalf("repeat: %d", r.status)
	}
	s.stop()
	var updates int
	for _, e := range readLog(t, dir) {
		if e.Type == "ShopScopesUpdated" {
			updates++
		}
	}
	if updates != 2 {
		t.Fatalf("%d scope updates recorded, want 2", updates)
	}
	store, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(dir, "readmodels.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	got, err := tenancy.NewQueries(store.DB()).ShopPlatformScopes(context.Background(), tn.shopID)
	if err != nil {
		t.Fatal(err)
	}
	missing := strings.Join(got.Missing(domain.DeclaredPlatformScopes()), ",")
	if strings.Contains(missing, "read_themes") || strings.Contains(missing, "read_customers") || !strings.Contains(missing, "read_inventory") {
		t.Fatalf("missing scopes %s (granted %v)", missing, got.Granted)
	}
}
