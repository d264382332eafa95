package domain_test

import (
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestMarketingConsentRecord(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	cus := domain.CustomerIDFromExternal("shop_1", "1")
	change := func(ch, state, source string) domain.ConsentChange {
		return domain.ConsentChange{ShopID: "shop_1", CustomerID: cus, Channel: ch, State: state, Source: source}
	}
	var a domain.MarketingConsent
	for _, c := range []struct {
		name      string
		in        domain.ConsentChange
		want      string // "" when nothing is recorded
		consented bool
	}{
		{"first e-mail state", change("email", "subscribed", "platform"), "subscribed", true},
		{"repeat", change("email", "subscribed", "platform"), "", false},
		{"upper case is the same state", change("email", " SUBSCRIBED ", "platform"), "", false},
		{"sms on its own", change("sms", "not_subscribed", "platform"), "not_subscribed", false},
		{"e-mail pending is not consent", change("email", "pending", "platform"), "pending", false},
		{"unsubscribed", change("email", "unsubscribed", "platform"), "unsubscribed", false},
		{"whatsapp opt-out", change("whatsapp", "opted_out", "whatsapp_reply"), "opted_out", false},
		{"whatsapp opt-out again", change("whatsapp", "opted_out", "whatsapp_reply"), "", false},
		{"whatsapp opt-in", change("whatsapp", "opted_in", "whatsapp_reply"), "opted_in", true},
	} {
		ev, err := a.Record(c.in, now)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.want == "" {
			if ev != nil {
				t.Errorf("%s: recorded %+v", c.name, ev)
			}
			continue
		}
		if ev == nil || ev.State != c.want || ev.Consented != c.consented || ev.Channel != c.in.Channel || !ev.At.Equal(now) || ev.CustomerID != cus {
			t.Fatalf("%s: %+v", c.name, ev)
		}
		a.Apply(ev)
	}
	for _, c := range []struct {
		name  string
		in    domain.ConsentChange
		field string
	}{
		{"no customer", domain.ConsentChange{ShopID: "shop_1", Channel: "email", State: "subscribed", Source: "platform"}, "customer_id"},
		{"unknown channel", change("fax", "subscribed", "platform"), "channel"},
		{"no state", change("email", " ", "platform"), "state"},
		{"unknown source", change("email", "subscribed", "guess"), "source"},
	} {
		_, err := a.Record(c.in, now)
		if e, ok := err.(*domain.Error); !ok || e.Field != c.field {
			t.Errorf("%s: %v, want field %s", c.name, err, c.field)
		}
	}
}

func TestWhatsAppReplyConsent(t *testing.T) {
	for text, want := range map[string]string{
		"STOP": "opted_out", " stop\n": "opted_out", "Stop": "opted_out", "STOPALL": "opted_out", "unsubscribe": "opted_out",
		"CANCEL": "opted_out", "end": "opted_out", "QUIT": "opted_out", "ARRET": "opted_out", "Arrêt": "opted_out",
		"STOPP": "opted_out", "baja": "opted_out",
		"START": "opted_in", "unstop": "opted_in", "Yes": "opted_in", "SUBSCRIBE": "opted_in",
		"stop sending me this": "", "Does it come in blue?": "", "": "", "no": "",
	} {
		if got := domain.WhatsAppReplyConsent(text); got != want {
			t.Errorf("%q: %q, want %q", text, got, want)
		}
	}
}

func TestMarketingConsentChangedIsNotPersonal(t *testing.T) {
	if _, ok := any(&domain.MarketingConsentChanged{}).(domain.Personal); ok {
		t.Fatal("MarketingConsentChanged carries ids and states only")
	}
	if _, ok := domain.Events().Spec("MarketingConsentChanged"); !ok {
		t.Fatal("MarketingConsentChanged is not in the catalogue")
	}
}
