package customers

import (
	"reflect"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
)

// The consent fold: the platform's states from the snapshots and the
// service's decisions, the most recent decision winning per channel.
func TestFoldConsentMostRecentWins(t *testing.T) {
	atRisk, churned := bounds(foldNow)
	at := func(h int) time.Time { return foldNow.Add(time.Duration(h) * time.Hour) }
	snapshot := func(pos int, email string, emailAt time.Time, sms string, updated time.Time) projections.DecodedEvent {
		return ev(pos, &domain.CustomerUpdated{CustomerID: "cus_a", ShopID: "s1", CustomerProfile: domain.CustomerProfile{
			EmailConsent: email, EmailConsentAt: emailAt, SMSConsent: sms, PlatformUpdated: updated}})
	}
	decide := func(pos int, ch, state, source string, when time.Time) projections.DecodedEvent {
		return ev(pos, &domain.CustomerConsentChanged{ShopID: "s1", CustomerID: "cus_a", Channel: ch, State: state, Source: source,
			MessageID: "m1", At: when})
	}
	type row struct{ channel, state, source string }
	for _, c := range []struct {
		name   string
		events []projections.DecodedEvent
		want   []row // the rows after the fold, by channel
	}{
		{"platform states", []projections.DecodedEvent{snapshot(1, "subscribed", at(1), "pending", at(2))},
			[]row{{"email", "subscribed", "platform"}, {"sms", "pending", "platform"}}},
		{"a link click after the platform's subscription wins", []projections.DecodedEvent{
			snapshot(1, "subscribed", at(1), "", at(1)), decide(2, "email", "unsubscribed", "unsubscribe_link", at(3))},
			[]row{{"email", "unsubscribed", "unsubscribe_link"}}},
		{"an older platform state does not re-subscribe", []projections.DecodedEvent{
			decide(1, "email", "unsubscribed", "unsubscribe_link", at(3)), snapshot(2, "subscribed", at(1), "", at(5))},
			[]row{{"email", "unsubscribed", "unsubscribe_link"}}},
		{"a newer platform state does", []projections.DecodedEvent{
			decide(1, "email", "unsubscribed", "unsubscribe_link", at(3)), snapshot(2, "subscribed", at(4), "", at(5))},
			[]row{{"email", "subscribed", "platform"}}},
		{"without consent_updated_at the snapshot's time counts", []projections.DecodedEvent{
			decide(1, "sms", "unsubscribed", "api", at(3)), snapshot(2, "", time.Time{}, "subscribed", at(2)),
			snapshot(3, "", time.Time{}, "subscribed", at(4))},
			[]row{{"sms", "subscribed", "platform"}}},
		{"accepts_marketing of older events is e-mail consent", []projections.DecodedEvent{
			ev(1, &domain.CustomerCreated{CustomerID: "cus_a", ShopID: "s1", CustomerProfile: domain.CustomerProfile{AcceptsMarketing: true}})},
			[]row{{"email", "subscribed", "platform"}}},
		{"nothing known", []projections.DecodedEvent{snapshot(1, "", time.Time{}, "", at(1))}, nil},
		{"erased", []projections.DecodedEvent{snapshot(1, "subscribed", at(1), "subscribed", at(1)),
			ev(2, &domain.CustomerErased{ShopID: "s1", CustomerID: "cus_a"})}, nil},
	} {
		r := newRows()
		ch := fold(r, c.events, atRisk, churned)
		var got []row
		for _, k := range ch.consents {
			got = append(got, row{k.Channel, k.State, k.Source})
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// A repeated snapshot writes no consent row.
func TestFoldConsentRepeatWritesNothing(t *testing.T) {
	atRisk, churned := bounds(foldNow)
	r := newRows()
	p := domain.CustomerProfile{EmailConsent: "subscribed", EmailConsentAt: foldNow}
	fold(r, []projections.DecodedEvent{ev(1, &domain.CustomerCreated{CustomerID: "cus_a", ShopID: "s1", CustomerProfile: p})}, atRisk, churned)
	ch := fold(r, []projections.DecodedEvent{ev(2, &domain.CustomerUpdated{CustomerID: "cus_a", ShopID: "s1", CustomerProfile: p})}, atRisk, churned)
	if len(ch.consents) != 0 {
		t.Fatalf("repeat wrote %+v", ch.consents)
	}
}
