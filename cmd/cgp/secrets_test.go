package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestSecretsNeverLeaveSealed (point 11 of issue 14): after a shop is
// created (webhook secret), WhatsApp connected (app secret) and privacy
// settings set (signing secret), no secret value is in any byte of the
// data directory (readmodels.db and its WAL included), in the audit
// history (which shows "[set]" in their place) or in the logs; signed
// webhooks of both platforms still verify, and still do after a replay
// rebuilt the read models.
func TestSecretsNeverLeaveSealed(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := connectWhatsApp(t, s, rm, "sealed-secrets.example.com", "agency", "1000000077")
	signing := cli(t, dir, "shops", "privacy", "--shop", wt.shopID, "--data-request-url", "https://dpo.sealed-secrets.example.com/gdpr")["signing_secret"].(string)
	waitForToken(t, s, wt.tenant)
	s.deliver(t, wt.tenant, "customers/create", "dlv-sealed-1", customerPayload(9400001, "sealed@example.com", 0, "0.00", "2026-03-01T10:00:00-05:00"))
	waDeliver(t, s, v, rm, wt, "messages_text")
	secrets := erasedValues{wt.secret, wt.appSecret, signing}

	// The audit history shows that each secret was set, not its value.
	var shown = map[string]string{}
	position := s.get(t, "/api/v1/customers", wt.token).header.Get("X-Event-Position")
	for cursor := ""; ; {
		q := "limit=100"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		r := s.get(t, "/api/v1/audit-events?"+q, wt.token, "X-Wait-For-Position", position)
		if r.status != 200 {
			t.Fatalf("audit-events: %d %s", r.status, r.body)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
		for _, sec := range secrets {
			if strings.Contains(string(r.body), sec) {
				t.Errorf("the audit history holds the secret %q", sec)
			}
		}
		doc := r.json(t)
		for _, d := range doc["data"].([]any) {
			a := d.(map[string]any)["attributes"].(map[string]any)
			data, _ := a["data"].(map[string]any)
			for _, field := range []string{"webhook_secret", "app_secret", "signing_secret"} {
				if val, ok := data[field].(string); ok {
					shown[a["event_type"].(string)+"."+field] = val
				}
			}
		}
		next, _ := doc["pagination"].(map[string]any)["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	for _, k := range []string{"ShopCreated.webhook_secret", "WhatsAppAccountConnected.app_secret", "ShopPrivacySettingsChanged.signing_secret"} {
		if shown[k] != domain.SecretMarker {
			t.Errorf("audit history %s = %q, want %q (all: %v)", k, shown[k], domain.SecretMarker, shown)
		}
	}
	s.stop()
	if found := secrets.findIn(t, dir); len(found) != 0 {
		t.Errorf("secrets in the data directory: %v", found)
	}
	logs := s.logs.String()
	for _, sec := range secrets {
		if strings.Contains(logs, sec) {
			t.Errorf("the logs hold the secret %q", sec)
		}
	}

	// A replay rebuilds the read models sealed; signatures still verify.
	replayCLI(t, dir)
	if found := secrets.findIn(t, dir); len(found) != 0 {
		t.Errorf("secrets in the data directory after a replay: %v", found)
	}
	s2 := startServer(t, dir)
	waitForToken(t, s2, wt.tenant)
	s2.deliver(t, wt.tenant, "customers/create", "dlv-sealed-2", customerPayload(9400002, "sealed2@example.com", 0, "0.00", "2026-03-01T10:00:00-05:00"))
	forged := wt.tenant
	forged.secret = domain.SecretMarker + "-not-the-secret"
	if r := s2.webhook(t, forged, "customers/create", "dlv-sealed-forged-2", customerPayload(9400004, "y@example.com", 0, "0.00", "2026-03-01T10:00:00-05:00")); r.status != 401 {
		t.Fatalf("webhook signed with a wrong secret: %d %s", r.status, r.body)
	}
	if r := waPost(t, s2, v, wt.appSecret, waFixture(t, "messages_text", wt.waba)); r.status != 200 {
		t.Fatalf("WhatsApp delivery after replay: %d %s", r.status, r.body)
	}
	if r := waPost(t, s2, v, "not-the-app-secret-0123456789", waFixture(t, "messages_text", wt.waba)); r.status == 200 {
		t.Fatalf("WhatsApp delivery signed with a wrong secret: %d", r.status)
	}
}
