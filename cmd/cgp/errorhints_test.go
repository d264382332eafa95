package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/ingest"
)

// errorOf returns the error member of a response without its request id.
func errorOf(t *testing.T, r response) map[string]any {
	t.Helper()
	r.errorCode(t) // checks the envelope and its request id
	e := r.json(t)["error"].(map[string]any)
	delete(e, "request_id")
	return e
}

// TestBearerSchemeMissingIsSaid: the token sent without "Bearer " is
// answered 401 invalid_token saying the scheme is missing, not that the
// token is revoked.
func TestBearerSchemeMissingIsSaid(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "scheme.example.com", "agency", "*")
	waitForToken(t, s, tn)
	for _, h := range []string{tn.token, "Token " + tn.token, "Bearer"} {
		r := do(t, http.MethodGet, s.base+"/api/v1/customers", nil, map[string]string{"Authorization": h})
		e := errorOf(t, r)
		msg, _ := e["message"].(string)
		if r.status != 401 || e["code"] != "invalid_token" || !strings.Contains(msg, "Bearer scheme is missing") || strings.Contains(msg, "revoked") {
			t.Errorf("Authorization %.12q…: %d %s", h, r.status, r.body)
		}
	}
	// A bearer token that is wrong still says only that it is invalid.
	r := do(t, http.MethodGet, s.base+"/api/v1/customers", nil, map[string]string{"Authorization": "Bearer copt_live_" + strings.Repeat("x", 32)})
	if e := errorOf(t, r); r.status != 401 || strings.Contains(e["message"].(string), "scheme") {
		t.Errorf("wrong bearer token: %d %s", r.status, r.body)
	}
}

// TestFlatBodyGetsTheShapeHint: a body without data.attributes is answered
// like the empty body, with the shape to send.
func TestFlatBodyGetsTheShapeHint(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "flat.example.com", "agency", "*")
	waitForToken(t, s, tn)
	post := func(body string) map[string]any {
		r := do(t, http.MethodPost, s.base+"/api/v1/audiences", []byte(body), map[string]string{
			"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"})
		if r.status != 422 {
			t.Fatalf("POST %s: %d %s", body, r.status, r.body)
		}
		return errorOf(t, r)
	}
	empty := post("")
	if !strings.Contains(empty["message"].(string), `{"data":{"attributes":{…}}}`) {
		t.Fatalf("empty body: %v", empty)
	}
	for _, body := range []string{`{"name":"VIPs","filter":{}}`, `{}`} {
		if got := post(body); fmtAny(got) != fmtAny(empty) {
			t.Errorf("flat body %s: %v; want the empty body's %v", body, got, empty)
		}
	}
	got := post(`{"data":{"name":"VIPs"}}`)
	if d := got["details"].(map[string]any); d["field"] != "data.attributes" || !strings.Contains(got["message"].(string), `{"data":{"attributes":{…}}}`) {
		t.Errorf("attributes directly in data: %v", got)
	}
}

// TestWebhookSignatureHints: a hex signature, a "sha256=" prefix and
// another platform's header names get a hint saying so; the answer for an
// unknown shop is the same as for a known shop's wrong signature, and no
// hint depends on the secret.
func TestWebhookSignatureHints(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "hints.example.com", "agency", "*")
	body := []byte(`{"id":1,"email":"a@example.com"}`)
	mac := hmac.New(sha256.New, []byte(tn.secret))
	mac.Write(body)
	hexSig := hex.EncodeToString(mac.Sum(nil))
	post := func(domain string, mod func(h map[string]string)) response {
		h := webhookHeaders(tn, "customers/create", "hint-1", body)
		h[ingest.HeaderShopDomain] = domain
		mod(h)
		return do(t, http.MethodPost, s.base+"/webhooks/events", body, h)
	}
	cases := []struct {
		name   string
		mod    func(h map[string]string)
		status int
		code   string
		want   string
	}{
		{"hex signature", func(h map[string]string) { h[ingest.HeaderHMAC] = hexSig }, 401, "invalid_signature", "hex"},
		{"sha256= prefix", func(h map[string]string) { h[ingest.HeaderHMAC] = "sha256=" + hexSig }, 401, "invalid_signature", `"sha256=" prefix`},
		{"another platform's headers", func(h map[string]string) {
			h["X-Shopify-Hmac-Sha256"] = h[ingest.HeaderHMAC]
			delete(h, ingest.HeaderHMAC)
		}, 400, "signature_required", "X-Shopify-Hmac-Sha256"},
		{"wrong secret", func(h map[string]string) {
			h[ingest.HeaderHMAC] = ingest.SignCommerce([]byte("not the secret at all"), body)
		}, 401, "invalid_signature", "base64 (not hex) HMAC-SHA256 of the raw request body"},
	}
	for _, c := range cases {
		known := post(tn.domain, c.mod)
		ke := errorOf(t, known)
		if known.status != c.status || ke["code"] != c.code || !strings.Contains(ke["message"].(string), c.want) ||
			ke["details"].(map[string]any)["hint"] == nil {
			t.Errorf("%s: %d %s; want %d %s mentioning %q", c.name, known.status, known.body, c.status, c.code, c.want)
		}
		if strings.Contains(string(known.body), tn.secret) || strings.Contains(string(known.body), hexSig[:16]) {
			t.Errorf("%s: the answer echoes the secret or the signature: %s", c.name, known.body)
		}
		unknown := post("nope.example.com", c.mod)
		if ue := errorOf(t, unknown); unknown.status != known.status || fmtAny(ue) != fmtAny(ke) {
			t.Errorf("%s: unknown shop answered %d %v, known shop %d %v", c.name, unknown.status, ue, known.status, ke)
		}
	}
}
