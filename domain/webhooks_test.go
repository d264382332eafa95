package domain_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

var (
	whNow  = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	whShop = &domain.Shop{ID: "shop_1", Exists: true}
	whEP   = domain.WebhookEndpoint{URL: "https://hooks.example.com/a", EventTypes: []string{"order.paid"}}
)

// created is the creation of subscription id with whEP.
func created(id string) domain.Event {
	return &domain.WebhookSubscriptionCreated{SubscriptionID: id, ShopID: "shop_1", URL: whEP.URL, EventTypes: whEP.EventTypes,
		Secret: "whsec_x", CreatedAt: whNow}
}

// given folds events into a shop's subscriptions.
func given(evs ...domain.Event) *domain.WebhookSubscriptions {
	w := &domain.WebhookSubscriptions{ShopID: "shop_1"}
	for _, e := range evs {
		w.Apply(e)
	}
	return w
}

// describe renders decided events compactly: "Type(field=value …)".
func describe(evs []domain.Event) string {
	var out []string
	for _, e := range evs {
		switch ev := e.(type) {
		case *domain.WebhookSubscriptionUpdated:
			out = append(out, fmt.Sprintf("Updated(%s %v %q changed=%v)", ev.URL, ev.EventTypes, ev.Description, ev.Changed))
		case *domain.WebhookSubscriptionDisabled:
			out = append(out, fmt.Sprintf("Disabled(%s %d)", ev.Reason, ev.Status))
		case *domain.WebhookSubscriptionEnabled:
			out = append(out, "Enabled")
		case *domain.WebhookSubscriptionFailing:
			out = append(out, fmt.Sprintf("Failing(%d)", ev.Level))
		default:
			out = append(out, e.EventType())
		}
	}
	return strings.Join(out, " ")
}

// errText is "code field" of a domain error ("" for nil).
func errText(err error) string {
	if err == nil {
		return ""
	}
	var de *domain.Error
	if !errors.As(err, &de) {
		return "not a domain error: " + err.Error()
	}
	return strings.TrimSpace(string(de.Code) + " " + de.Field)
}

func TestNewWebhookEndpoint(t *testing.T) {
	ep, err := domain.NewWebhookEndpoint(" https://hooks.example.com/a?x=1 ", []string{"order.paid", " order.created", "order.paid"}, "  ERP  ")
	if err != nil || ep.URL != "https://hooks.example.com/a?x=1" || fmt.Sprint(ep.EventTypes) != "[order.created order.paid]" || ep.Description != "ERP" {
		t.Fatalf("%+v %v", ep, err)
	}
	if ep, err := domain.NewWebhookEndpoint("https://h.example.com", []string{"*"}, ""); err != nil || fmt.Sprint(ep.EventTypes) != "[*]" {
		t.Fatalf("*: %+v %v", ep, err)
	}
	for _, c := range []struct {
		name, url string
		types     []string
		desc      string
		field     string
	}{
		{"no url", " ", []string{"order.paid"}, "", "url"},
		{"relative", "/hook", []string{"order.paid"}, "", "url"},
		{"ftp", "ftp://h.example.com/", []string{"order.paid"}, "", "url"},
		{"credentials", "https://u:p@h.example.com/", []string{"order.paid"}, "", "url"},
		{"fragment", "https://h.example.com/#x", []string{"order.paid"}, "", "url"},
		{"too long", "https://h.example.com/" + strings.Repeat("a", domain.MaxWebhookURLLength), []string{"order.paid"}, "", "url"},
		{"no types", "https://h.example.com/", nil, "", "event_types"},
		{"unknown type", "https://h.example.com/", []string{"order.paid", "order.exploded"}, "", "event_types"},
		{"* with others", "https://h.example.com/", []string{"*", "order.paid"}, "", "event_types"},
		{"long description", "https://h.example.com/", []string{"order.paid"}, strings.Repeat("é", domain.MaxWebhookDescription+1), "description"},
		{"invalid text", "https://h.example.com/", []string{"order.paid"}, "\xff", "description"},
	} {
		if _, err := domain.NewWebhookEndpoint(c.url, c.types, c.desc); errText(err) != "validation_failed "+c.field {
			t.Errorf("%s: %v, want a validation error on %s", c.name, err, c.field)
		}
	}
}

func TestWebhookSubscriptionsCreate(t *testing.T) {
	full := make([]domain.Event, 0, domain.MaxWebhookSubscriptions)
	for i := range domain.MaxWebhookSubscriptions {
		full = append(full, created(fmt.Sprintf("whs_%d", i)))
	}
	for _, c := range []struct {
		name  string
		given []domain.Event
		shop  *domain.Shop
		err   string
	}{
		{"first", nil, whShop, ""},
		{"unknown shop", nil, &domain.Shop{ID: "shop_1"}, "not_found"},
		{"at the limit", full, whShop, "validation_failed url"},
		{"a deletion frees a place", append(full[:len(full):len(full)], &domain.WebhookSubscriptionDeleted{SubscriptionID: "whs_3"}), whShop, ""},
		{"disabled ones count", append(full[:len(full):len(full)], &domain.WebhookSubscriptionDisabled{SubscriptionID: "whs_3", Reason: "merchant"}), whShop, "validation_failed url"},
	} {
		ev, err := given(c.given...).Create(c.shop, "whs_new", whEP, "whsec_new", whNow)
		if errText(err) != c.err {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
			continue
		}
		if err == nil {
			cr := ev.(*domain.WebhookSubscriptionCreated)
			if cr.SubscriptionID != "whs_new" || cr.ShopID != "shop_1" || cr.Secret != "whsec_new" || cr.URL != whEP.URL || !cr.CreatedAt.Equal(whNow) {
				t.Errorf("%s: %+v", c.name, cr)
			}
		}
	}
}

func TestWebhookSubscriptionsUpdate(t *testing.T) {
	yes, no := true, false
	other := domain.WebhookEndpoint{URL: "https://hooks.example.com/b", EventTypes: []string{"*"}, Description: "all"}
	disabled := &domain.WebhookSubscriptionDisabled{SubscriptionID: "whs_1", Reason: domain.WebhookDisabledGone, Status: 410}
	for _, c := range []struct {
		name    string
		given   []domain.Event
		id      string
		merged  domain.WebhookEndpoint
		enabled *bool
		want    string
		err     string
	}{
		{"nothing changes", []domain.Event{created("whs_1")}, "whs_1", whEP, nil, "", ""},
		{"settings change", []domain.Event{created("whs_1")}, "whs_1", other, nil, "Updated(https://hooks.example.com/b [*] \"all\" changed=[url event_types description])", ""},
		{"disable", []domain.Event{created("whs_1")}, "whs_1", whEP, &no, "Disabled(merchant 0)", ""},
		{"enable an enabled one", []domain.Event{created("whs_1")}, "whs_1", whEP, &yes, "", ""},
		{"enable a gone one", []domain.Event{created("whs_1"), disabled}, "whs_1", whEP, &yes, "Enabled", ""},
		{"disable a disabled one", []domain.Event{created("whs_1"), disabled}, "whs_1", whEP, &no, "", ""},
		{"change and enable", []domain.Event{created("whs_1"), disabled}, "whs_1", other, &yes,
			"Updated(https://hooks.example.com/b [*] \"all\" changed=[url event_types description]) Enabled", ""},
		{"unknown", []domain.Event{created("whs_1")}, "whs_2", other, nil, "", "not_found"},
		{"deleted", []domain.Event{created("whs_1"), &domain.WebhookSubscriptionDeleted{SubscriptionID: "whs_1"}}, "whs_1", other, nil, "", "not_found"},
	} {
		evs, err := given(c.given...).Update(c.id, c.merged, c.enabled, whNow)
		if errText(err) != c.err || describe(evs) != c.want {
			t.Errorf("%s: %s %v, want %s %q", c.name, describe(evs), err, c.want, c.err)
		}
	}
}

func TestWebhookSubscriptionsRotateSecret(t *testing.T) {
	w := given(created("whs_1"))
	for _, c := range []struct {
		name    string
		id      string
		overlap time.Duration
		until   time.Time
		err     string
	}{
		{"default overlap", "whs_1", domain.DefaultWebhookSecretOverlap, whNow.Add(24 * time.Hour), ""},
		{"no overlap", "whs_1", 0, time.Time{}, ""},
		{"the longest", "whs_1", domain.MaxWebhookSecretOverlap, whNow.Add(7 * 24 * time.Hour), ""},
		{"too long", "whs_1", domain.MaxWebhookSecretOverlap + time.Second, time.Time{}, "validation_failed overlap_seconds"},
		{"negative", "whs_1", -time.Second, time.Time{}, "validation_failed overlap_seconds"},
		{"unknown", "whs_2", time.Hour, time.Time{}, "not_found"},
	} {
		ev, err := w.RotateSecret(c.id, "whsec_new", c.overlap, whNow)
		if errText(err) != c.err {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
			continue
		}
		if err == nil {
			r := ev.(*domain.WebhookSecretRotated)
			if r.Secret != "whsec_new" || !r.PreviousValidUntil.Equal(c.until) || !r.RotatedAt.Equal(whNow) {
				t.Errorf("%s: %+v", c.name, r)
			}
		}
	}
}

// The delivery side's decisions: disabling and warning decide nothing
// twice, nor for a subscription gone or disabled.
func TestWebhookSubscriptionsDisableAndWarn(t *testing.T) {
	since, at := whNow.Add(-48*time.Hour), whNow.Add(72*time.Hour)
	warned := &domain.WebhookSubscriptionFailing{SubscriptionID: "whs_1", Level: 1, FailingSince: since}
	for _, c := range []struct {
		name  string
		given []domain.Event
		do    func(*domain.WebhookSubscriptions) []domain.Event
		want  string
	}{
		{"gone", []domain.Event{created("whs_1")},
			func(w *domain.WebhookSubscriptions) []domain.Event {
				return w.Disable("whs_1", domain.WebhookDisabledGone, 410, whNow)
			}, "Disabled(gone 410)"},
		{"disabled twice", []domain.Event{created("whs_1"), &domain.WebhookSubscriptionDisabled{SubscriptionID: "whs_1"}},
			func(w *domain.WebhookSubscriptions) []domain.Event {
				return w.Disable("whs_1", domain.WebhookDisabledFailing, 0, whNow)
			}, ""},
		{"disable a deleted one", nil,
			func(w *domain.WebhookSubscriptions) []domain.Event {
				return w.Disable("whs_1", domain.WebhookDisabledGone, 410, whNow)
			}, ""},
		{"first warning", []domain.Event{created("whs_1")},
			func(w *domain.WebhookSubscriptions) []domain.Event {
				return w.Warn("whs_1", 1, since, at, "HTTP 500", whNow)
			}, "Failing(1)"},
		{"same level again", []domain.Event{created("whs_1"), warned},
			func(w *domain.WebhookSubscriptions) []domain.Event {
				return w.Warn("whs_1", 1, since, at, "HTTP 500", whNow)
			}, ""},
		{"a new failing period warns again", []domain.Event{created("whs_1"), warned},
			func(w *domain.WebhookSubscriptions) []domain.Event {
				return w.Warn("whs_1", 1, since.Add(time.Hour), at, "HTTP 500", whNow)
			}, "Failing(1)"},
		{"next level", []domain.Event{created("whs_1"), warned},
			func(w *domain.WebhookSubscriptions) []domain.Event {
				return w.Warn("whs_1", 2, since, at, "HTTP 500", whNow)
			}, "Failing(2)"},
		{"a change restarts the levels", []domain.Event{created("whs_1"), warned, &domain.WebhookSubscriptionUpdated{SubscriptionID: "whs_1", URL: "https://x.example.com"}},
			func(w *domain.WebhookSubscriptions) []domain.Event {
				return w.Warn("whs_1", 1, since, at, "HTTP 500", whNow)
			}, "Failing(1)"},
		{"enabling restarts the levels", []domain.Event{created("whs_1"), warned, &domain.WebhookSubscriptionDisabled{SubscriptionID: "whs_1"},
			&domain.WebhookSubscriptionEnabled{SubscriptionID: "whs_1"}},
			func(w *domain.WebhookSubscriptions) []domain.Event {
				return w.Warn("whs_1", 1, since, at, "HTTP 500", whNow)
			}, "Failing(1)"},
		{"no warning while disabled", []domain.Event{created("whs_1"), &domain.WebhookSubscriptionDisabled{SubscriptionID: "whs_1"}},
			func(w *domain.WebhookSubscriptions) []domain.Event {
				return w.Warn("whs_1", 1, since, at, "HTTP 500", whNow)
			}, ""},
	} {
		if got := describe(c.do(given(c.given...))); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestWebhookSubscriptionsPingAndRedeliver(t *testing.T) {
	off := given(created("whs_1"), &domain.WebhookSubscriptionDisabled{SubscriptionID: "whs_1", Reason: "merchant"})
	on := given(created("whs_1"))
	if ev, err := off.Ping("whs_1", "evt_1", whNow); err != nil || ev.(*domain.WebhookPingRequested).PingID != "evt_1" {
		t.Fatalf("ping a disabled subscription: %v %v", ev, err)
	}
	if _, err := on.Ping("whs_2", "evt_1", whNow); errText(err) != "not_found" {
		t.Fatalf("ping an unknown subscription: %v", err)
	}
	for _, c := range []struct {
		name     string
		w        *domain.WebhookSubscriptions
		delivery string
		since    time.Time
		kind     string
		err      string
	}{
		{"retry one", on, "whd_1", time.Time{}, domain.WebhookRedeliverOne, ""},
		{"recover", on, "", whNow.Add(-time.Hour), domain.WebhookRedeliverSince, ""},
		{"recover without since", on, "", time.Time{}, "", "validation_failed since"},
		{"recover from the future", on, "", whNow.Add(time.Hour), "", "validation_failed since"},
		{"disabled", off, "whd_1", time.Time{}, "", "conflict"},
	} {
		ev, err := c.w.Redeliver("whs_1", c.delivery, c.since, whNow)
		if errText(err) != c.err {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
			continue
		}
		if err == nil && ev.(*domain.WebhookRedeliveryRequested).Kind != c.kind {
			t.Errorf("%s: %+v", c.name, ev)
		}
	}
}

func TestWebhookCatalogueAndMatching(t *testing.T) {
	types := domain.WebhookEventTypes()
	for i, ty := range types {
		if i > 0 && types[i-1].Name >= ty.Name {
			t.Errorf("catalogue not sorted at %s", ty.Name)
		}
		if ty.Version < 1 || ty.Description == "" || !domain.IsWebhookEventType(ty.Name) {
			t.Errorf("catalogue entry %+v", ty)
		}
	}
	if domain.IsWebhookEventType("ping") || domain.IsWebhookEventType("*") {
		t.Error("ping or * is a subscribable type")
	}
	if !domain.WebhookSubscribes([]string{"*"}, "order.paid") || !domain.WebhookSubscribes([]string{"order.paid"}, "order.paid") ||
		domain.WebhookSubscribes([]string{"order.created"}, "order.paid") {
		t.Error("WebhookSubscribes")
	}
	if a, b := domain.WebhookDeliveryID("whs_1", "evt_1"), domain.WebhookDeliveryID("whs_1", "evt_1"); a != b || !strings.HasPrefix(a, "whd_") ||
		a == domain.WebhookDeliveryID("whs_2", "evt_1") {
		t.Errorf("delivery ids %s %s", a, b)
	}
}
