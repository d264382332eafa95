package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// consentCustomerBody is a customer in the platform's webhook shape with
// the given e-mail and SMS consent states.
func consentCustomerBody(id int64, updated, email, sms string) []byte {
	return []byte(fmt.Sprintf(`{"id":%d,"email":"c%d@example.com","accepts_marketing":false,"created_at":"2026-01-02T10:00:00-05:00",
"updated_at":%q,"first_name":"Ada","last_name":"Byron","orders_count":0,"state":"enabled","total_spent":"0.00",
"tags":"","currency":"USD","phone":"+1 555 003 1337",
"email_marketing_consent":{"state":%q,"opt_in_level":"single_opt_in","consent_updated_at":%q},
"sms_marketing_consent":{"state":%q,"opt_in_level":"single_opt_in","consent_updated_at":null,"consent_collected_from":"OTHER"}}`,
		id, id, updated, email, updated, sms))
}

// waText is an inbound WhatsApp text from the phone wa, with its own
// message id.
func waText(t *testing.T, waba, wa, id, text string) []byte {
	t.Helper()
	b := waFixture(t, "messages_text", waba)
	b = bytes.ReplaceAll(b, []byte("16505551234"), []byte(wa))
	b = bytes.ReplaceAll(b, []byte("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA="), []byte(id))
	return bytes.ReplaceAll(b, []byte(`"Does it come in another color?"`), []byte(strconv.Quote(text)))
}

// Marketing consent per channel: the platform's customer webhooks record
// e-mail and SMS consent, an update records only what changed and a
// redelivery nothing; a WhatsApp "Stop" from the customer's phone opts
// out of WhatsApp and "START" opts back in; GET shows it all.
func TestMarketingConsent(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := connectWhatsApp(t, s, rm, "consent.example.com", "enterprise", "3001")
	tn := wt.tenant
	cus := domain.CustomerIDFromExternal(tn.shopID, "7001")

	consentOf := func() map[string]any {
		r := s.get(t, "/api/v1/customers/"+cus, tn.token)
		if r.status == http.StatusNotFound {
			return nil
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != http.StatusOK {
			t.Fatalf("GET customer: %d %s", r.status, r.body)
		}
		mc, _ := attrs(r.json(t)["data"].(map[string]any))["marketing_consent"].(map[string]any)
		return mc
	}
	channel := func(mc map[string]any, ch string) string {
		c, _ := mc[ch].(map[string]any)
		if c == nil {
			return "null"
		}
		return fmt.Sprintf("%v/%v/%v", c["consented"], c["state"], c["source"])
	}
	waitFor := func(what string, want map[string]string) {
		t.Helper()
		var last map[string]any
		eventually(t, minEventually, what, func() bool {
			last = consentOf()
			for ch, w := range want {
				if channel(last, ch) != w {
					return false
				}
			}
			return true
		})
	}

	create := consentCustomerBody(7001, "2026-10-01T10:00:00Z", "subscribed", "not_subscribed")
	if r := s.webhook(t, tn, "customers/create", "dlv-consent-1", create); r.status != http.StatusOK {
		t.Fatalf("customers/create: %d %s", r.status, r.body)
	}
	waitFor("consent from customers/create", map[string]string{
		"email": "true/subscribed/platform", "sms": "false/not_subscribed/platform", "whatsapp": "null"})

	update := consentCustomerBody(7001, "2026-10-02T10:00:00Z", "unsubscribed", "not_subscribed")
	for _, id := range []string{"dlv-consent-2", "dlv-consent-2", "dlv-consent-3"} { // a redelivery, then the same snapshot again
		if r := s.webhook(t, tn, "customers/update", id, update); r.status != http.StatusOK {
			t.Fatalf("customers/update %s: %d %s", id, r.status, r.body)
		}
	}
	waitFor("e-mail unsubscribed", map[string]string{"email": "false/unsubscribed/platform", "sms": "false/not_subscribed/platform"})

	// Any other message is not consent; STOP in any case opts out.
	for i, text := range []string{"Does it come in blue?", " Stop "} {
		r := waPost(t, s, v, wt.appSecret, waText(t, wt.waba, "15550031337", fmt.Sprintf("wamid.consent-%d", i), text))
		if r.status != http.StatusOK {
			t.Fatalf("inbound %d: %d %s", i, r.status, r.body)
		}
	}
	waitFor("WhatsApp opt-out", map[string]string{"whatsapp": "false/opted_out/whatsapp_reply", "email": "false/unsubscribed/platform"})
	if r := waPost(t, s, v, wt.appSecret, waText(t, wt.waba, "15550031337", "wamid.consent-2", "START")); r.status != http.StatusOK {
		t.Fatalf("START: %d %s", r.status, r.body)
	}
	waitFor("WhatsApp opt-in", map[string]string{"whatsapp": "true/opted_in/whatsapp_reply"})

	// One event per change, in order: the redeliveries and the repeated
	// SMS state recorded nothing.
	var got []string
	eventually(t, minEventually, "the audit history has the opt-in", func() bool {
		got = got[:0]
		for _, e := range auditOf(t, s, tn.token, "MarketingConsentChanged") {
			d, _ := e["data"].(map[string]any)
			got = append(got, fmt.Sprintf("%v:%v", d["channel"], d["state"]))
		}
		return len(got) > 0 && strings.HasPrefix(got[len(got)-1], "whatsapp:opted_in")
	})
	want := "email:subscribed sms:not_subscribed email:unsubscribed whatsapp:opted_out whatsapp:opted_in"
	if strings.Join(got, " ") != want {
		t.Fatalf("consent events %q, want %q", strings.Join(got, " "), want)
	}
	if strings.Contains(s.logs.String(), "Does it come in blue") || strings.Contains(s.logs.String(), "15550031337") {
		t.Errorf("the logs hold the message or the phone")
	}
}
