package domain_test

import (
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestConsentDecisionDecide(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	ok := domain.ConsentDecision{ShopID: "shop_1", CustomerID: "cus_1", Channel: "whatsapp", State: "unsubscribed", Source: "inbound_reply", MessageID: "wamid.1"}
	ev, err := ok.Decide(now)
	if err != nil || ev.State != "unsubscribed" || ev.Channel != "whatsapp" || !ev.At.Equal(now) || ev.MessageID != "wamid.1" || ev.CustomerID != "cus_1" {
		t.Fatalf("%+v %v", ev, err)
	}
	at := now.Add(-time.Hour)
	with := ok
	with.At = at
	if ev, _ := with.Decide(now); !ev.At.Equal(at) {
		t.Errorf("the decision's own time is kept: %v", ev.At)
	}
	for _, c := range []struct {
		name  string
		edit  func(*domain.ConsentDecision)
		field string
	}{
		{"no customer", func(d *domain.ConsentDecision) { d.CustomerID = "" }, "customer_id"},
		{"no shop", func(d *domain.ConsentDecision) { d.ShopID = "" }, "customer_id"},
		{"unknown channel", func(d *domain.ConsentDecision) { d.Channel = "fax" }, "channel"},
		{"platform state", func(d *domain.ConsentDecision) { d.State = "pending" }, "state"},
		{"unknown source", func(d *domain.ConsentDecision) { d.Source = "platform" }, "source"},
		{"long message id", func(d *domain.ConsentDecision) { d.MessageID = string(make([]byte, 300)) }, "message_id"},
	} {
		d := ok
		c.edit(&d)
		_, err := d.Decide(now)
		if e, isDomain := err.(*domain.Error); !isDomain || e.Field != c.field {
			t.Errorf("%s: %v, want field %s", c.name, err, c.field)
		}
	}
}

func TestReplyConsent(t *testing.T) {
	for text, want := range map[string]string{
		"STOP": "unsubscribed", " stop\n": "unsubscribed", "Stop": "unsubscribed", "STOP ALL": "unsubscribed", "stop   all": "unsubscribed",
		"STOPALL": "unsubscribed", "unsubscribe": "unsubscribed", "CANCEL": "unsubscribed", "end": "unsubscribed", "QUIT": "unsubscribed",
		"ARRET": "unsubscribed", "Arrêt": "unsubscribed", "STOPP": "unsubscribed", "baja": "unsubscribed",
		"START": "subscribed", "unstop": "subscribed", "Yes": "subscribed", "SUBSCRIBE": "subscribed",
		"stop sending me this": "", "Does it come in blue?": "", "": "", "no": "", "yes please": "",
	} {
		if got := domain.ReplyConsent(text); got != want {
			t.Errorf("%q: %q, want %q", text, got, want)
		}
	}
}

func TestConsentGivenAndPlatformStates(t *testing.T) {
	for state, want := range map[string]bool{"subscribed": true, "not_subscribed": false, "unsubscribed": false, "pending": false,
		"redacted": false, "invalid": false, "unknown": false} {
		if domain.ConsentGiven(state) != want {
			t.Errorf("%s: consent %v", state, !want)
		}
	}
	if got := domain.PlatformConsentState(" SUBSCRIBED "); got != "subscribed" {
		t.Errorf("upper case: %q", got)
	}
	if got := domain.PlatformConsentState(string(make([]byte, 65))); got != "" {
		t.Errorf("long: %q", got)
	}
}

func TestCustomerConsentChangedIsNotPersonal(t *testing.T) {
	if _, ok := any(&domain.CustomerConsentChanged{}).(domain.Personal); ok {
		t.Fatal("CustomerConsentChanged carries ids and states only")
	}
	if spec, ok := domain.Events().Spec("CustomerConsentChanged"); !ok || spec.Version != 1 {
		t.Fatal("CustomerConsentChanged v1 is not in the catalogue")
	}
}
