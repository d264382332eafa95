package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// webhookClient drives the subscriptions API with one token, checking
// every answer against the OpenAPI document.
type webhookClient struct {
	t     *testing.T
	s     *testServer
	v     *openapitest.Validator
	token string
}

func (c webhookClient) call(method, path, body string) response {
	c.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + c.token}
	if body != "" {
		h["Content-Type"] = "application/json"
	}
	r := do(c.t, method, c.s.base+path, []byte(body), h)
	c.v.ValidateResponse(c.t, r.req, r.resp, r.body)
	return r
}

// get reads path once the read models reached pos.
func (c webhookClient) get(path, pos string) response {
	c.t.Helper()
	r := c.s.get(c.t, path, c.token, "X-Wait-For-Position", pos)
	c.v.ValidateResponse(c.t, r.req, r.resp, r.body)
	return r
}

func subscriptionBody(url string, types []string, description string) string {
	b, _ := json.Marshal(map[string]any{"data": map[string]any{"attributes": map[string]any{"url": url, "event_types": types, "description": description}}})
	return string(b)
}

func whAttrs(t *testing.T, r response) map[string]any {
	t.Helper()
	return r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
}

// wantInvalid asserts a 422 validation_failed naming field, with a message
// that mentions what.
func wantInvalid(t *testing.T, name string, r response, field, what string) {
	t.Helper()
	if r.status != 422 || r.errorCode(t) != "validation_failed" {
		t.Errorf("%s: %d %s, want 422", name, r.status, r.body)
		return
	}
	e := r.json(t)["error"].(map[string]any)
	got, _ := e["details"].(map[string]any)["field"].(string)
	if got != field || !strings.Contains(e["message"].(string), what) {
		t.Errorf("%s: field %q message %q, want field %q mentioning %q", name, got, e["message"], field, what)
	}
}

// mintToken issues a token of shop with scopes through the CLI.
func mintToken(t *testing.T, dir, shop, scopes string) (id, token string, pos uint64) {
	t.Helper()
	tok := cli(t, dir, "tokens", "create", "--shop", shop, "--scopes", scopes)
	return tok["id"].(string), tok["token"].(string), uint64(tok["position"].(float64))
}

// TestWebhookSubscriptionsOverHTTP: create shows the secret once; list,
// read, change, rotate and delete; every bad input is a 422 naming its
// field; the scopes hold; another shop's subscription is a 404; every
// change is in the audit history with its actor and "[set]" for secrets;
// no secret is in the logs or any file of the data directory.
func TestWebhookSubscriptionsOverHTTP(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir) // without --outbound-allow-private
	v := openapitest.NewValidator(t)
	a := newTenant(t, dir, "hooks-a.example.com", "agency", "audit:read")
	b := newTenant(t, dir, "hooks-b.example.com", "agency", "*")
	writerID, writer, _ := mintToken(t, dir, a.shopID, "webhooks:write")
	_, reader, pos := mintToken(t, dir, a.shopID, "webhooks:read")
	waitForToken(t, s, tenant{token: reader, position: pos})
	waitForToken(t, s, b)
	w := webhookClient{t, s, v, writer}
	rd := webhookClient{t, s, v, reader}
	other := webhookClient{t, s, v, b.token}

	// Create: 201 with the secret, shown this once.
	created := w.call(http.MethodPost, "/api/v1/webhook-subscriptions",
		subscriptionBody("https://erp.hooks-a.example.com/cgp", []string{"order.paid", "order.created"}, " Orders to the ERP "))
	if created.status != 201 {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	doc := created.json(t)["data"].(map[string]any)
	id, ca := doc["id"].(string), whAttrs(t, created)
	secret, _ := ca["secret"].(string)
	if !strings.HasPrefix(id, domain.PrefixWebhookSubscription) || doc["type"] != "webhook_subscription" || !strings.HasPrefix(secret, "whsec_") ||
		ca["enabled"] != true || ca["description"] != "Orders to the ERP" || fmt.Sprint(ca["event_types"]) != "[order.created order.paid]" {
		t.Fatalf("created: %s", created.body)
	}
	if created.header.Get("Location") != "/api/v1/webhook-subscriptions/"+id || created.header.Get("Cache-Control") != "no-store" {
		t.Errorf("create headers: Location %q Cache-Control %q", created.header.Get("Location"), created.header.Get("Cache-Control"))
	}
	secrets := erasedValues{secret}

	// With an Idempotency-Key, a repeat answers the same subscription and
	// secret; the stored answer is sealed (the data-directory scan below
	// covers idempotency.db).
	idemBody := subscriptionBody("https://crm.hooks-a.example.com/cgp", []string{"customer.created"}, "")
	idemHeaders := map[string]string{"Authorization": "Bearer " + writer, "Content-Type": "application/json", "Idempotency-Key": "create-crm-1"}
	first := do(t, http.MethodPost, s.base+"/api/v1/webhook-subscriptions", []byte(idemBody), idemHeaders)
	again := do(t, http.MethodPost, s.base+"/api/v1/webhook-subscriptions", []byte(idemBody), idemHeaders)
	if first.status != 201 || again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" ||
		whAttrs(t, again)["secret"] != whAttrs(t, first)["secret"] || !bytes.Equal(first.body, again.body) {
		t.Fatalf("idempotent create: %d %s / %d %s", first.status, first.body, again.status, again.body)
	}
	secrets = append(secrets, whAttrs(t, first)["secret"].(string))
	idemID := first.json(t)["data"].(map[string]any)["id"].(string)
	idemDeleted := w.call(http.MethodDelete, "/api/v1/webhook-subscriptions/"+idemID, "")
	if idemDeleted.status != 204 {
		t.Fatalf("delete: %d %s", idemDeleted.status, idemDeleted.body)
	}

	// Read and list: never the secret.
	one := rd.get("/api/v1/webhook-subscriptions/"+id, created.position(t))
	if one.status != 200 || whAttrs(t, one)["url"] != "https://erp.hooks-a.example.com/cgp" {
		t.Fatalf("get: %d %s", one.status, one.body)
	}
	list := rd.get("/api/v1/webhook-subscriptions", idemDeleted.position(t)) // the deletion folded too
	if items := list.json(t)["data"].([]any); list.status != 200 || len(items) != 1 || items[0].(map[string]any)["id"] != id {
		t.Fatalf("list: %d %s", list.status, list.body)
	}
	for _, r := range []response{one, list} {
		if bytes.Contains(r.body, []byte(secret)) || bytes.Contains(r.body, []byte(`"secret"`)) {
			t.Fatalf("a read shows the secret: %s", r.body)
		}
	}

	// Change: settings, then disable and enable.
	patched := w.call(http.MethodPatch, "/api/v1/webhook-subscriptions/"+id,
		`{"data":{"attributes":{"event_types":["order.refunded","order.paid"],"description":"ERP v2"}}}`)
	if pa := whAttrs(t, patched); patched.status != 200 || fmt.Sprint(pa["event_types"]) != "[order.paid order.refunded]" ||
		pa["description"] != "ERP v2" || pa["url"] != "https://erp.hooks-a.example.com/cgp" || pa["secret"] != nil {
		t.Fatalf("patch: %d %s", patched.status, patched.body)
	}
	disabled := w.call(http.MethodPatch, "/api/v1/webhook-subscriptions/"+id, `{"data":{"attributes":{"enabled":false}}}`)
	if da := whAttrs(t, disabled); disabled.status != 200 || da["enabled"] != false || da["disabled_reason"] != "merchant" || da["disabled_at"] == nil {
		t.Fatalf("disable: %d %s", disabled.status, disabled.body)
	}
	enabled := w.call(http.MethodPatch, "/api/v1/webhook-subscriptions/"+id, `{"data":{"attributes":{"enabled":true}}}`)
	if ea := whAttrs(t, enabled); enabled.status != 200 || ea["enabled"] != true || ea["disabled_reason"] != nil {
		t.Fatalf("enable: %d %s", enabled.status, enabled.body)
	}

	// Rotate: a new secret each time, with the overlap asked.
	rotated := w.call(http.MethodPost, "/api/v1/webhook-subscriptions/"+id+"/rotate-secret", `{"data":{"attributes":{"overlap_seconds":3600}}}`)
	ra := whAttrs(t, rotated)
	fresh, _ := ra["secret"].(string)
	if rotated.status != 200 || !strings.HasPrefix(fresh, "whsec_") || fresh == secret || ra["previous_secret_valid_until"] == nil ||
		rotated.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("rotate: %d %s", rotated.status, rotated.body)
	}
	byDefault := w.call(http.MethodPost, "/api/v1/webhook-subscriptions/"+id+"/rotate-secret", "")
	if byDefault.status != 200 || whAttrs(t, byDefault)["previous_secret_valid_until"] == nil {
		t.Fatalf("rotate without a body: %d %s", byDefault.status, byDefault.body)
	}
	atOnce := w.call(http.MethodPost, "/api/v1/webhook-subscriptions/"+id+"/rotate-secret", `{"data":{"attributes":{"overlap_seconds":0}}}`)
	if atOnce.status != 200 || whAttrs(t, atOnce)["previous_secret_valid_until"] != nil {
		t.Fatalf("rotate with no overlap: %d %s", atOnce.status, atOnce.body)
	}
	secrets = append(secrets, fresh, whAttrs(t, byDefault)["secret"].(string), whAttrs(t, atOnce)["secret"].(string))

	// Bad input: 422 naming the field, nothing recorded.
	for name, c := range map[string]struct{ method, path, body, field, what string }{
		"no url":           {"POST", "", subscriptionBody("", []string{"order.paid"}, ""), "url", "required"},
		"plain http":       {"POST", "", subscriptionBody("http://erp.hooks-a.example.com/", []string{"order.paid"}, ""), "url", "https"},
		"loopback address": {"POST", "", subscriptionBody("https://127.0.0.1/hook", []string{"order.paid"}, ""), "url", "loopback"},
		"localhost":        {"POST", "", subscriptionBody("https://localhost/hook", []string{"order.paid"}, ""), "url", "local"},
		"private address":  {"POST", "", subscriptionBody("https://10.0.0.8/hook", []string{"order.paid"}, ""), "url", "private"},
		"unknown type":     {"POST", "", subscriptionBody("https://erp.hooks-a.example.com/", []string{"order.exploded"}, ""), "event_types", "order.exploded"},
		"no types":         {"POST", "", subscriptionBody("https://erp.hooks-a.example.com/", []string{}, ""), "event_types", "at least one"},
		"patch to http":    {"PATCH", "/" + id, `{"data":{"attributes":{"url":"http://erp.hooks-a.example.com/"}}}`, "url", "https"},
		"patch no types":   {"PATCH", "/" + id, `{"data":{"attributes":{"event_types":[]}}}`, "event_types", "at least one"},
		"patch unknown":    {"PATCH", "/" + id, `{"data":{"attributes":{"secret":"whsec_mine"}}}`, "secret", "unknown"},
		"overlap too long": {"POST", "/" + id + "/rotate-secret", `{"data":{"attributes":{"overlap_seconds":604801}}}`, "overlap_seconds", "604800"},
		"overlap negative": {"POST", "/" + id + "/rotate-secret", `{"data":{"attributes":{"overlap_seconds":-1}}}`, "overlap_seconds", "604800"},
	} {
		wantInvalid(t, name, w.call(c.method, "/api/v1/webhook-subscriptions"+c.path, c.body), c.field, c.what)
	}

	// Scopes: the read token cannot write.
	for _, r := range []response{
		rd.call(http.MethodPost, "/api/v1/webhook-subscriptions", subscriptionBody("https://x.hooks-a.example.com/", []string{"*"}, "")),
		rd.call(http.MethodPatch, "/api/v1/webhook-subscriptions/"+id, `{"data":{"attributes":{"enabled":false}}}`),
		rd.call(http.MethodDelete, "/api/v1/webhook-subscriptions/"+id, ""),
		rd.call(http.MethodPost, "/api/v1/webhook-subscriptions/"+id+"/rotate-secret", ""),
	} {
		if r.status != 403 || r.errorCode(t) != "scope_required" {
			t.Errorf("%s %s with webhooks:read: %d %s", r.req.Method, r.req.URL.Path, r.status, r.body)
		}
	}

	// Tenant isolation: shop B's token finds nothing of shop A's.
	for _, r := range []response{
		other.get("/api/v1/webhook-subscriptions/"+id, atOnce.position(t)),
		other.call(http.MethodPatch, "/api/v1/webhook-subscriptions/"+id, `{"data":{"attributes":{"enabled":false}}}`),
		other.call(http.MethodDelete, "/api/v1/webhook-subscriptions/"+id, ""),
		other.call(http.MethodPost, "/api/v1/webhook-subscriptions/"+id+"/rotate-secret", ""),
	} {
		if r.status != 404 || r.errorCode(t) != "not_found" {
			t.Errorf("%s %s with shop B's token: %d %s", r.req.Method, r.req.URL.Path, r.status, r.body)
		}
	}
	if r := other.get("/api/v1/webhook-subscriptions", atOnce.position(t)); len(r.json(t)["data"].([]any)) != 0 {
		t.Errorf("shop B lists shop A's subscriptions: %s", r.body)
	}

	// The catalogue.
	types := rd.get("/api/v1/webhook-event-types", "0")
	tdoc := types.json(t)
	if types.status != 200 || tdoc["meta"].(map[string]any)["catalogue_version"] == "" || len(tdoc["data"].([]any)) != len(domain.WebhookEventTypes()) {
		t.Fatalf("event types: %d %s", types.status, types.body)
	}
	if first := tdoc["data"].([]any)[0].(map[string]any); first["type"] != "webhook_event_type" || first["id"] != domain.WebhookEventTypes()[0].Name {
		t.Errorf("first event type: %v", first)
	}

	// Delete: 204, then not found.
	deleted := w.call(http.MethodDelete, "/api/v1/webhook-subscriptions/"+id, "")
	if deleted.status != 204 {
		t.Fatalf("delete: %d %s", deleted.status, deleted.body)
	}
	if r := rd.get("/api/v1/webhook-subscriptions/"+id, deleted.position(t)); r.status != 404 {
		t.Fatalf("get after delete: %d %s", r.status, r.body)
	}

	// The audit history: every change with the writer's token id as actor,
	// each secret as "[set]".
	seen := map[string]int{}
	for cursor := ""; ; {
		q := "limit=100"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		r := s.get(t, "/api/v1/audit-events?"+q, a.token, "X-Wait-For-Position", deleted.position(t))
		if r.status != 200 {
			t.Fatalf("audit-events: %d %s", r.status, r.body)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
		for _, sec := range secrets {
			if strings.Contains(string(r.body), sec) {
				t.Errorf("the audit history holds a webhook secret")
			}
		}
		d := r.json(t)
		for _, raw := range d["data"].([]any) {
			ea := raw.(map[string]any)["attributes"].(map[string]any)
			typ, _ := ea["event_type"].(string)
			if !strings.HasPrefix(typ, "Webhook") {
				continue
			}
			seen[typ]++
			if ea["actor"] != writerID || ea["source"] != "api" {
				t.Errorf("%s: actor %v source %v, want %s api", typ, ea["actor"], ea["source"], writerID)
			}
			if data := ea["data"].(map[string]any); (typ == "WebhookSubscriptionCreated" || typ == "WebhookSecretRotated") && data["secret"] != domain.SecretMarker {
				t.Errorf("%s: secret shown as %v, want %q", typ, data["secret"], domain.SecretMarker)
			}
		}
		next, _ := d["pagination"].(map[string]any)["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	want := map[string]int{"WebhookSubscriptionCreated": 2, "WebhookSubscriptionUpdated": 1, "WebhookSubscriptionDisabled": 1,
		"WebhookSubscriptionEnabled": 1, "WebhookSecretRotated": 3, "WebhookSubscriptionDeleted": 2}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("audit history: %v, want %v", seen, want)
	}

	s.stop()
	if found := secrets.findIn(t, dir); len(found) != 0 {
		t.Errorf("webhook secrets in the data directory: %v", found)
	}
	for _, sec := range secrets {
		if strings.Contains(s.logs.String(), sec) {
			t.Errorf("the logs hold a webhook secret")
		}
	}
}

// TestWebhookSubscriptionLimitUnderConcurrency: 25 creations at once leave
// 20 subscriptions; the others are 422 on url, and a 21st later too.
func TestWebhookSubscriptionLimitUnderConcurrency(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "hooks-limit.example.com", "agency", "webhooks:read,webhooks:write")
	waitForToken(t, s, tn)
	c := webhookClient{t, s, v, tn.token}
	const n = 25
	var wg sync.WaitGroup
	answers := make([]response, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A creation that lost the race to the shop's stream too often
			// is a 409 conflict with Retry-After: the client retries.
			for range 100 {
				answers[i] = c.call(http.MethodPost, "/api/v1/webhook-subscriptions",
					subscriptionBody(fmt.Sprintf("https://hooks-limit.example.com/%d", i), []string{"*"}, ""))
				if answers[i].status != http.StatusConflict || answers[i].header.Get("Retry-After") == "" {
					return
				}
			}
		}()
	}
	wg.Wait()
	created, last := 0, uint64(0)
	for _, r := range answers {
		switch r.status {
		case 201:
			created++
			last = max(last, mustUint(t, r.position(t)))
		case 422:
			wantInvalid(t, "over the limit", r, "url", "at most 20")
		default:
			t.Errorf("concurrent create: %d %s", r.status, r.body)
		}
	}
	if created != domain.MaxWebhookSubscriptions {
		t.Fatalf("%d of %d concurrent creations succeeded, want %d", created, n, domain.MaxWebhookSubscriptions)
	}
	r := c.get("/api/v1/webhook-subscriptions?limit=100", fmt.Sprint(last))
	if got := len(r.json(t)["data"].([]any)); got != domain.MaxWebhookSubscriptions {
		t.Fatalf("listed %d subscriptions, want %d", got, domain.MaxWebhookSubscriptions)
	}
	wantInvalid(t, "21st", c.call(http.MethodPost, "/api/v1/webhook-subscriptions",
		subscriptionBody("https://hooks-limit.example.com/21", []string{"*"}, "")), "url", "at most 20")
}

// TestWebhooksCLI: the CLI twins create (secret printed once), list from
// the read model, update, rotate and delete; plain http and loopback are
// refused unless --outbound-allow-private.
func TestWebhooksCLI(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "hooks-cli.example.com", "agency", "webhooks:read")
	waitForToken(t, s, tn)
	for _, args := range [][]string{
		{"--url", "http://hooks-cli.example.com/h"},
		{"--url", "https://127.0.0.1/h"},
	} {
		all := append([]string{"webhooks", "create", "--shop", tn.shopID, "--event-types", "order.paid", "--data-dir", dir}, args...)
		if code, _, stderr := runCLI(all...); code != exitUsage || !strings.Contains(stderr, "url") {
			t.Errorf("cgp %s: exit %d %s", strings.Join(all, " "), code, stderr)
		}
	}
	created := cli(t, dir, "webhooks", "create", "--shop", tn.shopID, "--url", "http://127.0.0.1:9/h", "--event-types", "order.paid,order.created",
		"--description", "local receiver", "--outbound-allow-private")
	id, secret := created["id"].(string), created["secret"].(string)
	if !strings.HasPrefix(id, "whs_") || !strings.HasPrefix(secret, "whsec_") || fmt.Sprint(created["event_types"]) != "[order.created order.paid]" {
		t.Fatalf("created: %v", created)
	}
	// The URL is checked again on any change of the settings: a local
	// receiver needs the option here too.
	if code, _, stderr := runCLI("webhooks", "update", "--shop", tn.shopID, "--id", id, "--description", "x", "--data-dir", dir); code != exitUsage ||
		!strings.Contains(stderr, "https") {
		t.Errorf("update of a local receiver without the option: exit %d %s", code, stderr)
	}
	updated := cli(t, dir, "webhooks", "update", "--shop", tn.shopID, "--id", id, "--enabled=false", "--description", "paused",
		"--outbound-allow-private")
	if updated["enabled"] != false || updated["disabled_reason"] != "merchant" || updated["description"] != "paused" || updated["secret"] != nil {
		t.Fatalf("updated: %v", updated)
	}
	rotated := cli(t, dir, "webhooks", "rotate-secret", "--shop", tn.shopID, "--id", id, "--overlap", "1h")
	if s2, _ := rotated["secret"].(string); !strings.HasPrefix(s2, "whsec_") || s2 == secret || rotated["previous_secret_valid_until"] == nil {
		t.Fatalf("rotated: %v", rotated)
	}
	eventually(t, minEventually, "the CLI's subscription in the list", func() bool {
		subs := cli(t, dir, "webhooks", "list", "--shop", tn.shopID)["subscriptions"].([]any)
		return len(subs) == 1 && subs[0].(map[string]any)["description"] == "paused" && subs[0].(map[string]any)["secret_rotated_at"] != nil
	})
	if r := s.get(t, "/api/v1/webhook-subscriptions/"+id, tn.token, "X-Wait-For-Position", fmt.Sprint(rotated["position"])); r.status != 200 ||
		bytes.Contains(r.body, []byte(secret)) {
		t.Fatalf("the CLI's subscription over HTTP: %d %s", r.status, r.body)
	}
	cli(t, dir, "webhooks", "delete", "--shop", tn.shopID, "--id", id)
	eventually(t, minEventually, "the deleted subscription out of the list", func() bool {
		return len(cli(t, dir, "webhooks", "list", "--shop", tn.shopID)["subscriptions"].([]any)) == 0
	})
	if code, _, _ := runCLI("webhooks", "delete", "--shop", tn.shopID, "--id", id, "--data-dir", dir); code == 0 {
		t.Error("deleting twice succeeded")
	}
}
