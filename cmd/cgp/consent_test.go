package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/consent"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/projections/customers"
)

// consentCustomer is a customers webhook payload: email and phone as
// given ("" for none), consent objects as given (raw JSON, "" for none).
func consentCustomer(id int64, updated time.Time, email, phone, emailConsent, smsConsent string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%d,"first_name":"Ada","last_name":"Byron","orders_count":0,"state":"enabled","total_spent":"0.00","tags":"","currency":"USD",`+
		`"created_at":"2026-01-02T10:00:00Z","updated_at":%q`, id, updated.UTC().Format(time.RFC3339))
	if email != "" {
		fmt.Fprintf(&b, `,"email":%q`, email)
	}
	if phone != "" {
		fmt.Fprintf(&b, `,"phone":%q`, phone)
	}
	if emailConsent != "" {
		b.WriteString(`,"email_marketing_consent":` + emailConsent)
	}
	if smsConsent != "" {
		b.WriteString(`,"sms_marketing_consent":` + smsConsent)
	}
	b.WriteString("}")
	return []byte(b.String())
}

func consentObject(state string, at time.Time) string {
	if at.IsZero() {
		return fmt.Sprintf(`{"state":%q,"opt_in_level":"single_opt_in","consent_updated_at":null}`, state)
	}
	return fmt.Sprintf(`{"state":%q,"opt_in_level":"single_opt_in","consent_updated_at":%q}`, state, at.UTC().Format(time.RFC3339))
}

// waReply is an inbound WhatsApp text from the phone wa, with its own
// message id and time.
func waReply(t *testing.T, waba, wa, id, text string, sent time.Time) []byte {
	t.Helper()
	b := waFixture(t, "messages_text", waba)
	b = bytes.ReplaceAll(b, []byte("16505551234"), []byte(wa))
	b = bytes.ReplaceAll(b, []byte("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA="), []byte(id))
	b = bytes.ReplaceAll(b, []byte(`"1749416383"`), []byte(strconv.Quote(strconv.FormatInt(sent.Unix(), 10))))
	return bytes.ReplaceAll(b, []byte(`"Does it come in another color?"`), []byte(strconv.Quote(text)))
}

// Marketing consent end to end: the platform's states from customer
// webhooks, Recipients per channel, the API decision, WhatsApp STOP and
// START, the unsubscribe link (GET changes nothing, POST opts out, a
// forged token is 400) and the most recent decision winning over a later
// snapshot with an older consent time.
func TestMarketingConsent(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var links consent.Links
	s := startServerWith(t, dir, func(c *Config) {
		c.PublicURL = "https://cgp.example.com"
		c.Test.OnUnsubscribeLinks = func(l consent.Links) { mu.Lock(); links = l; mu.Unlock() }
	})
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := connectWhatsApp(t, s, rm, "consent.example.com", "enterprise", "3001")
	tn := wt.tenant
	id := func(ext string) string { return domain.CustomerIDFromExternal(tn.shopID, ext) }
	ctx := context.Background()
	q := customers.NewQueries(rm)
	now := time.Now().UTC().Truncate(time.Second)
	old := now.Add(-30 * 24 * time.Hour)

	for i, body := range [][]byte{
		consentCustomer(8001, old, "a@example.com", "+1 555 003 8001", consentObject("subscribed", old), consentObject("subscribed", old)),
		consentCustomer(8002, old, "b@example.com", "+1 555 003 8002", consentObject("unsubscribed", old), consentObject("not_subscribed", time.Time{})),
		consentCustomer(8003, old, "c@example.com", "", "", ""),
		consentCustomer(8004, old, "", "+1 555 003 8004", consentObject("subscribed", old), ""),
	} {
		if r := s.webhook(t, tn, "customers/create", fmt.Sprintf("dlv-consent-%d", i), body); r.status != http.StatusOK {
			t.Fatalf("customers/create %d: %d %s", i, r.status, r.body)
		}
	}

	consentOf := func(ext string) map[string]any {
		t.Helper()
		r := s.get(t, "/api/v1/customers/"+id(ext), tn.token)
		if r.status == http.StatusNotFound {
			return nil
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != http.StatusOK {
			t.Fatalf("GET customer: %d %s", r.status, r.body)
		}
		mc, _ := attrs(r.json(t)["data"].(map[string]any))["consent"].(map[string]any)
		return mc
	}
	channel := func(mc map[string]any, ch string) string {
		c, _ := mc[ch].(map[string]any)
		if c == nil {
			return "absent"
		}
		return fmt.Sprintf("%v/%v", c["state"], c["source"])
	}
	waitFor := func(what, ext string, want map[string]string) {
		t.Helper()
		var last map[string]any
		eventually(t, minEventually, what, func() bool {
			last = consentOf(ext)
			for ch, w := range want {
				if channel(last, ch) != w {
					return false
				}
			}
			return true
		})
	}
	waitFor("platform consent", "8001", map[string]string{"email": "subscribed/platform", "sms": "subscribed/platform", "whatsapp": "unknown/<nil>"})
	waitFor("platform consent", "8002", map[string]string{"email": "unsubscribed/platform", "sms": "not_subscribed/platform"})
	waitFor("absent consent", "8003", map[string]string{"email": "unknown/<nil>", "sms": "unknown/<nil>", "whatsapp": "unknown/<nil>"})
	waitFor("consent without address", "8004", map[string]string{"email": "subscribed/platform"})

	recipients := func(ch string) ([]string, customers.RecipientSkips) {
		t.Helper()
		ids, skipped, err := q.Recipients(ctx, tn.shopID, domain.AudienceFilters{}, ch, time.Now())
		if err != nil {
			t.Fatalf("Recipients %s: %v", ch, err)
		}
		return ids, skipped
	}
	if ids, sk := recipients("email"); !reflect.DeepEqual(ids, []string{id("8001")}) || sk != (customers.RecipientSkips{NoConsent: 2, NoAddress: 1}) {
		t.Fatalf("email recipients %v %+v", ids, sk)
	}
	if ids, sk := recipients("sms"); !reflect.DeepEqual(ids, []string{id("8001")}) || sk != (customers.RecipientSkips{NoConsent: 3}) {
		t.Fatalf("sms recipients %v %+v", ids, sk)
	}
	if ids, sk := recipients("whatsapp"); len(ids) != 0 || sk != (customers.RecipientSkips{NoConsent: 4}) {
		t.Fatalf("whatsapp recipients %v %+v", ids, sk)
	}

	// The API decision: bad channel and state are 422 naming the field,
	// an unknown customer 404.
	post := func(cus, body string) response {
		t.Helper()
		r := do(t, http.MethodPost, s.base+"/api/v1/customers/"+cus+"/consents", []byte(body),
			map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return r
	}
	for _, c := range []struct{ body, field string }{
		{`{"data":{"attributes":{"channel":"fax","state":"subscribed"}}}`, "channel"},
		{`{"data":{"attributes":{"channel":"whatsapp","state":"maybe"}}}`, "state"},
		{`{"data":{"attributes":{"state":"subscribed"}}}`, "channel"},
		{`{"data":{"attributes":{"channel":"sms"}}}`, "state"},
	} {
		r := post(id("8002"), c.body)
		if r.status != http.StatusUnprocessableEntity || r.errorCode(t) != "validation_failed" {
			t.Fatalf("%s: %d %s", c.body, r.status, r.body)
		}
		if f, _ := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["field"].(string); f != c.field {
			t.Fatalf("%s: field %q, want %q", c.body, f, c.field)
		}
	}
	if r := post(id("9999"), `{"data":{"attributes":{"channel":"email","state":"subscribed"}}}`); r.status != http.StatusNotFound {
		t.Fatalf("unknown customer: %d %s", r.status, r.body)
	}
	if r := post(id("8002"), `{"data":{"attributes":{"channel":"whatsapp","state":"subscribed"}}}`); r.status != http.StatusCreated {
		t.Fatalf("API decision: %d %s", r.status, r.body)
	}
	waitFor("API decision", "8002", map[string]string{"whatsapp": "subscribed/api"})
	if ids, _ := recipients("whatsapp"); !reflect.DeepEqual(ids, []string{id("8002")}) {
		t.Fatalf("whatsapp recipients after the API decision %v", ids)
	}

	// WhatsApp replies from 8001's phone: any other text is no decision,
	// START subscribes, STOP unsubscribes.
	for i, text := range []string{"Does it come in blue?", "START", " Stop "} {
		r := waPost(t, s, v, wt.appSecret, waReply(t, wt.waba, "15550038001", fmt.Sprintf("wamid.consent-%d", i), text, now.Add(time.Duration(i)*time.Minute)))
		if r.status != http.StatusOK {
			t.Fatalf("inbound %d: %d %s", i, r.status, r.body)
		}
		if text == "START" {
			waitFor("WhatsApp START", "8001", map[string]string{"whatsapp": "subscribed/inbound_reply"})
			if ok, err := q.Consented(ctx, tn.shopID, id("8001"), "whatsapp"); err != nil || !ok {
				t.Fatalf("Consented after START: %v %v", ok, err)
			}
		}
	}
	waitFor("WhatsApp STOP", "8001", map[string]string{"whatsapp": "unsubscribed/inbound_reply", "email": "subscribed/platform"})
	if ok, err := q.Consented(ctx, tn.shopID, id("8001"), "whatsapp"); err != nil || ok {
		t.Fatalf("Consented after STOP: %v %v", ok, err)
	}

	// The unsubscribe link: GET shows a page and changes nothing, a
	// forged token is 400, POST (one-click) opts out.
	mu.Lock()
	l := links
	mu.Unlock()
	link := l.URL(consent.Claims{ShopID: tn.shopID, CustomerID: id("8001"), Channel: "email", MessageID: "msg_consent_1"})
	if !strings.HasPrefix(link, "https://cgp.example.com/api/public/unsubscribe?token=") {
		t.Fatalf("link %s", link)
	}
	u, _ := url.Parse(link)
	local := s.base + u.RequestURI()
	// (The validator reads JSON only: the HTML answers are checked here.)
	r := do(t, http.MethodGet, local, nil, nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `method="post"`) || r.header.Get("Cache-Control") != "no-store" ||
		!strings.Contains(r.header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("GET link: %d %v %s", r.status, r.header, r.body)
	}
	forged := l.Token(consent.Claims{ShopID: tn.shopID, CustomerID: id("8002"), Channel: "email"})
	forged = forged[:len(forged)-3] + "AAA"
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		r := do(t, m, s.base+consent.UnsubscribePath+"?token="+url.QueryEscape(forged), []byte("List-Unsubscribe=One-Click"),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != http.StatusBadRequest || r.errorCode(t) != "invalid_parameter" {
			t.Fatalf("forged %s: %d %s", m, r.status, r.body)
		}
	}
	r = do(t, http.MethodPost, local, []byte("List-Unsubscribe=One-Click"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if r.status != http.StatusOK || len(r.body) != 0 {
		t.Fatalf("one-click POST: %d %s", r.status, r.body)
	}
	waitFor("unsubscribed by the link", "8001", map[string]string{"email": "unsubscribed/unsubscribe_link"})
	// The page's form: a POST without the one-click body answers a page.
	form, _ := url.Parse(l.URL(consent.Claims{ShopID: tn.shopID, CustomerID: id("8004"), Channel: "sms"}))
	r = do(t, http.MethodPost, s.base+form.RequestURI(), nil, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "You are unsubscribed") || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("form POST: %d %s", r.status, r.body)
	}
	waitFor("unsubscribed by the form", "8004", map[string]string{"sms": "unsubscribed/unsubscribe_link"})
	if ids, _ := recipients("email"); len(ids) != 0 {
		t.Fatalf("email recipients after the link %v", ids)
	}
	var links1 int
	eventually(t, minEventually, "the audit history has the link's decision", func() bool {
		links1 = 0
		for _, e := range auditOf(t, s, tn.token, "CustomerConsentChanged") {
			if d, _ := e["data"].(map[string]any); d["source"] == "unsubscribe_link" && d["channel"] == "email" {
				links1++
			}
		}
		return links1 > 0
	})
	if links1 != 1 {
		t.Fatalf("%d unsubscribe_link decisions, want 1 (the GET recorded one)", links1)
	}

	// A later snapshot whose consent is older than the click does not
	// re-subscribe; one whose consent is newer does.
	later := consentCustomer(8001, now.Add(time.Hour), "a@example.com", "+1 555 003 8001", consentObject("subscribed", old), consentObject("subscribed", old))
	if r := s.webhook(t, tn, "customers/update", "dlv-consent-older", later); r.status != http.StatusOK {
		t.Fatalf("customers/update: %d %s", r.status, r.body)
	}
	marker := consentCustomer(8003, now.Add(time.Hour), "c@example.com", "", consentObject("subscribed", now), "")
	if r := s.webhook(t, tn, "customers/update", "dlv-consent-marker", marker); r.status != http.StatusOK {
		t.Fatalf("customers/update: %d %s", r.status, r.body)
	}
	waitFor("the later delivery is folded", "8003", map[string]string{"email": "subscribed/platform"})
	waitFor("older platform consent does not re-subscribe", "8001", map[string]string{"email": "unsubscribed/unsubscribe_link"})
	newer := consentCustomer(8001, now.Add(2*time.Hour), "a@example.com", "+1 555 003 8001",
		consentObject("subscribed", now.Add(2*time.Hour)), consentObject("subscribed", old))
	if r := s.webhook(t, tn, "customers/update", "dlv-consent-newer", newer); r.status != http.StatusOK {
		t.Fatalf("customers/update: %d %s", r.status, r.body)
	}
	waitFor("newer platform consent re-subscribes", "8001", map[string]string{"email": "subscribed/platform"})
	if logs := s.logs.String(); strings.Contains(logs, "Does it come in blue") || strings.Contains(logs, "15550038001") || strings.Contains(logs, forged) {
		t.Errorf("the logs hold a message, a phone or a token")
	}
}
