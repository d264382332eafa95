package shopify_test

import (
	"testing"
	"time"

	"github.com/cgp-platform/cgp/ingest/shopify"
)

// The platform's consent objects (REST webhook payloads): e-mail and SMS
// states with their consent_updated_at, the legacy accepts_marketing.
func TestCustomerProfileConsent(t *testing.T) {
	jan := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name             string
		body             string
		email, sms       string
		emailAt, smsAt   time.Time
		acceptsMarketing bool
	}{
		{"both", `{"id":1,"email_marketing_consent":{"state":"subscribed","opt_in_level":"confirmed_opt_in","consent_updated_at":"2026-01-01T00:00:00Z"},
			"sms_marketing_consent":{"state":"not_subscribed","opt_in_level":"single_opt_in","consent_updated_at":null,"consent_collected_from":"OTHER"}}`,
			"subscribed", "not_subscribed", jan, time.Time{}, true},
		{"offset time, upper case, no sms", `{"id":1,"email_marketing_consent":{"state":"UNSUBSCRIBED","consent_updated_at":"2025-12-31T19:00:00-05:00"}}`,
			"unsubscribed", "", jan, time.Time{}, false},
		{"pending is not consent", `{"id":1,"accepts_marketing":true,"email_marketing_consent":{"state":"pending"}}`, "pending", "", time.Time{}, time.Time{}, false},
		{"sms time", `{"id":1,"sms_marketing_consent":{"state":"subscribed","consent_updated_at":"2026-01-01T00:00:00Z"}}`, "", "subscribed", time.Time{}, jan, false},
		{"legacy accepts_marketing", `{"id":1,"accepts_marketing":true}`, "subscribed", "", time.Time{}, time.Time{}, true},
		{"legacy accepts_marketing false", `{"id":1,"accepts_marketing":false}`, "not_subscribed", "", time.Time{}, time.Time{}, false},
		{"nothing", `{"id":1}`, "", "", time.Time{}, time.Time{}, false},
	} {
		p, err := shopify.ParseCustomerProfile([]byte(c.body))
		if err != nil || p.EmailConsent != c.email || p.SMSConsent != c.sms || p.AcceptsMarketing != c.acceptsMarketing ||
			!p.EmailConsentAt.Equal(c.emailAt) || !p.SMSConsentAt.Equal(c.smsAt) {
			t.Errorf("%s: %+v %v", c.name, p, err)
		}
	}
	_, err := shopify.ParseCustomerProfile([]byte(`{"id":1,"email_marketing_consent":{"state":"subscribed","consent_updated_at":"yesterday"}}`))
	if err == nil {
		t.Error("a malformed consent_updated_at was accepted")
	}
}
