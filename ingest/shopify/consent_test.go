package shopify_test

import (
	"testing"

	"github.com/cgp-platform/cgp/ingest/shopify"
)

func TestCustomerProfileConsent(t *testing.T) {
	for _, c := range []struct {
		name, body       string
		email, sms       string
		acceptsMarketing bool
	}{
		{"both", `{"id":1,"email_marketing_consent":{"state":"subscribed","opt_in_level":"confirmed_opt_in","consent_updated_at":"2026-01-01T00:00:00Z"},
			"sms_marketing_consent":{"state":"not_subscribed","opt_in_level":"single_opt_in","consent_updated_at":null,"consent_collected_from":"OTHER"}}`,
			"subscribed", "not_subscribed", true},
		{"upper case e-mail, no sms", `{"id":1,"email_marketing_consent":{"state":"UNSUBSCRIBED"}}`, "unsubscribed", "", false},
		{"pending is not marketing", `{"id":1,"accepts_marketing":true,"email_marketing_consent":{"state":"pending"}}`, "pending", "", false},
		{"legacy accepts_marketing only", `{"id":1,"accepts_marketing":true}`, "", "", true},
		{"nothing", `{"id":1}`, "", "", false},
	} {
		p, err := shopify.ParseCustomerProfile([]byte(c.body))
		if err != nil || p.EmailConsent != c.email || p.SMSConsent != c.sms || p.AcceptsMarketing != c.acceptsMarketing {
			t.Errorf("%s: %+v %v", c.name, p, err)
		}
	}
}
