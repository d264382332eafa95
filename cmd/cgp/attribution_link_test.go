package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestAttributionPixelVisitorLinkedOverHTTP: an anonymous visitor lands
// from a TikTok ad (pixel, public key) and starts the checkout whose token
// the pixel reports; the checkouts/create webhook of that checkout (token
// and customer, its landing made direct) links the visitor to the
// customer, so the customer's order credits the pixel's landing: first
// touch 100% to the pixel event (paid_social), last touch 100% to the
// order's own landing, linear 57.15 each of 114.30. A malformed
// checkout_token is a 422 naming it. Then the shop's lookback window is
// set to 1 hour with `cgp shops attribution`: GET
// /api/v1/attribution/settings shows it (30 days and default before), a
// later order of the same customer is credited to its own landing alone,
// and the first order keeps its credits. A window out of bounds is a usage
// error (exit 2), an unknown shop a failure (exit 1). Every answer is
// validated against the OpenAPI document.
func TestAttributionPixelVisitorLinkedOverHTTP(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "attr-link.example.com", "agency", "attribution:read")
	pk := cli(t, dir, "public-keys", "create", "--shop", tn.shopID)
	waitForToken(t, s, tn)
	key := pk["token"].(string)

	now := time.Now().UTC().Truncate(time.Second)
	t0 := now.Add(-3 * time.Hour)
	const anon = "anon-linked-visitor-1"
	const token = "b7e3c1d2a4f5e6a7b8c9d0e1f2a3b4c5" // the checkouts/create fixture's
	pixel := func(typ, url, extra string, at time.Time) response {
		t.Helper()
		body := fmt.Sprintf(`{"data":{"attributes":{"type":%q,"url":%q,"anonymous_id":%q,"occurred_at":%q%s}}}`,
			typ, url, anon, at.Format(time.RFC3339), extra)
		h := map[string]string{"Content-Type": "application/json", "X-Public-Key": key, "X-Wait-For-Position": fmtAny(pk["position"])}
		r := do(t, http.MethodPost, s.base+"/api/public/events", []byte(body), h)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	land := pixel("page_view", "https://attr-link.example.com/?utm_source=tiktok&utm_medium=paid_social&utm_campaign=winter", "", t0)
	if land.status != http.StatusAccepted {
		t.Fatalf("pixel landing: %d %s", land.status, land.body)
	}
	landingID := land.json(t)["data"].(map[string]any)["id"].(string)
	if r := pixel("checkout_started", "https://attr-link.example.com/checkouts/cn/x", `,"checkout_token":"a b"`, t0); r.status != 422 ||
		r.errorCode(t) != "validation_failed" || errorDetails(t, r)["field"] != "checkout_token" {
		t.Errorf("a malformed checkout_token: %d %s", r.status, r.body)
	}
	if r := pixel("checkout_started", "https://attr-link.example.com/checkouts/cn/"+token, `,"checkout_token":"`+token+`"`,
		t0.Add(5*time.Minute)); r.status != http.StatusAccepted {
		t.Fatalf("pixel checkout_started: %d %s", r.status, r.body)
	}

	co := fixture(t, shopify.TopicCheckoutsCreate)
	co = withField(t, co, "created_at", `"2026-03-09T10:52:00+01:00"`, strconv.Quote(t0.Add(6*time.Minute).Format(time.RFC3339)))
	co = withField(t, co, "updated_at", `"2026-03-09T10:55:31+01:00"`, strconv.Quote(t0.Add(7*time.Minute).Format(time.RFC3339)))
	co = withField(t, co, "landing_site",
		`"/?utm_source=facebook&utm_medium=paid_social&utm_campaign=spring%20launch&utm_term=linen+shirt&fbclid=IwAR0abc123"`, `"/"`)
	co = withField(t, co, "referring_site", `"https://l.facebook.com/"`, `null`)
	pos := s.deliver(t, tn, shopify.TopicCheckoutsCreate, "dlv-link-co", co)
	const customer = "7064055069303700841"
	pos = max(pos, s.deliverOrder(t, tn, testOrder{ext: 8001, customer: customer, created: now.Add(-2 * time.Hour).Format(time.RFC3339),
		total: "114.30", financial: "paid"}))
	orderID := domain.OrderIDFromExternal(tn.shopID, "8001")

	get := func(path string, wait uint64) response {
		t.Helper()
		r := s.get(t, path, tn.token, "X-Wait-For-Position", strconv.FormatUint(wait, 10))
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		return r
	}
	models := func(order string, wait uint64) map[string][]map[string]any {
		t.Helper()
		for _, rec := range toMaps(get("/api/v1/attribution", wait).json(t)["data"]) {
			if rec["id"] == order {
				out := map[string][]map[string]any{}
				for m, cs := range attrs(rec)["models"].(map[string]any) {
					out[m] = toMaps(cs)
				}
				return out
			}
		}
		t.Fatalf("no attribution record for %s", order)
		return nil
	}
	m := models(orderID, pos)
	first, last, linear := m["first_touch"], m["last_touch"], m["linear"]
	if len(first) != 2 || first[0]["touchpoint_id"] != landingID || first[0]["channel"] != "paid_social" || first[0]["weight"] != 1.0 ||
		first[0]["revenue"] != 114.3 || first[0]["campaign"] != "winter" {
		t.Errorf("first touch: %v, want the pixel landing %s", first, landingID)
	}
	if len(last) != 2 || last[1]["touchpoint_id"] != orderID || last[1]["weight"] != 1.0 || last[1]["revenue"] != 114.3 {
		t.Errorf("last touch: %v", last)
	}
	if len(linear) != 2 || linear[0]["revenue"] != 57.15 || linear[1]["revenue"] != 57.15 {
		t.Errorf("linear: %v", linear)
	}

	// The lookback window: default, then 1 hour.
	settings := func(wait uint64) map[string]any {
		t.Helper()
		r := get("/api/v1/attribution/settings", wait)
		if r.header.Get("X-Service-Stability") != "beta" {
			t.Errorf("stability %q", r.header.Get("X-Service-Stability"))
		}
		d := r.json(t)["data"].(map[string]any)
		if d["id"] != tn.shopID || d["type"] != "attribution_settings" {
			t.Errorf("settings resource: %v", d)
		}
		return attrs(d)
	}
	if a := settings(pos); a["lookback"] != "30d" || a["lookback_seconds"] != 2592000.0 || a["default"] != true || a["updated_at"] != nil {
		t.Errorf("default settings: %v", a)
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"shops", "attribution", "--shop", tn.shopID, "--lookback", "400d", "--data-dir", dir}, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "lookback") {
		t.Errorf("400d: exit %d, %s", code, errb.String())
	}
	errb.Reset()
	if code := Run(context.Background(), []string{"shops", "attribution", "--shop", "shop_nobody", "--lookback", "14d", "--data-dir", dir}, &out, &errb); code != exitFailure ||
		!strings.Contains(errb.String(), "shop not found") {
		t.Errorf("an unknown shop: exit %d, %s", code, errb.String())
	}
	set := cli(t, dir, "shops", "attribution", "--shop", tn.shopID, "--lookback", "1h")
	setPos := uint64(set["position"].(float64))
	if set["lookback"] != "1h0m0s" || set["changed"] != true || setPos == 0 {
		t.Fatalf("cgp shops attribution: %v", set)
	}
	if a := settings(setPos); a["lookback"] != "1h0m0s" || a["lookback_seconds"] != 3600.0 || a["default"] != false || a["updated_at"] == nil {
		t.Errorf("settings after the change: %v", a)
	}
	if r := s.get(t, "/api/v1/attribution/settings?include=shop", tn.token); r.status != 400 || errorDetails(t, r)["field"] != "include" {
		t.Errorf("include=shop: %d %s", r.status, r.body)
	}

	// Two hours after the first order, whose landing is outside its window.
	pos = s.deliverOrder(t, tn, testOrder{ext: 8002, customer: customer, created: now.Format(time.RFC3339),
		total: "20.00", financial: "paid"})
	second := domain.OrderIDFromExternal(tn.shopID, "8002")
	m2 := models(second, pos)
	if f := m2["first_touch"]; len(f) != 1 || f[0]["touchpoint_id"] != second || f[0]["revenue"] != 20.0 {
		t.Errorf("first touch of the order after the 1-hour window: %v, want %s alone", f, second)
	}
	if f := models(orderID, pos)["first_touch"]; len(f) != 2 || f[0]["touchpoint_id"] != landingID {
		t.Errorf("the first order's credits changed: %v", f)
	}
}
