package consent_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/consent"
)

var meta = commands.Meta{Actor: "test", Source: "cli"}

// The reactor records e-mail and SMS consent from the customer snapshots
// (accepts_marketing when there is no e-mail consent), only on a change;
// a rebuilt reactor appends nothing; the read model shows the latest state
// per channel and forgets an erased customer.
func TestReactorAndReadModel(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	var ticks atomic.Int64
	core := testenv.New(t, func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * time.Second) })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	record := func(ctx context.Context, c domain.ConsentChange, source string) error {
		_, err := core.Commands.RecordMarketingConsent(ctx, commands.RecordMarketingConsent{Change: c, SourceEventID: source}, meta)
		return err
	}
	snapshot := func(ext string, n int, p domain.CustomerProfile) {
		t.Helper()
		p.ExternalID, p.PlatformUpdated = ext, start.Add(time.Duration(n)*time.Hour)
		_, err := core.Commands.RecordCustomer(ctx, commands.RecordCustomer{ShopID: "shop_a", Profile: p,
			EventID: eventlog.DeterministicID("test", ext, fmt.Sprint(n))}, meta)
		must(err)
	}
	snapshot("1", 1, domain.CustomerProfile{EmailConsent: "subscribed", SMSConsent: "pending", AcceptsMarketing: true})
	snapshot("1", 2, domain.CustomerProfile{EmailConsent: "subscribed", SMSConsent: "subscribed", AcceptsMarketing: true})
	snapshot("1", 3, domain.CustomerProfile{EmailConsent: "unsubscribed", SMSConsent: "subscribed"})
	snapshot("2", 1, domain.CustomerProfile{AcceptsMarketing: true})

	rs := core.ReadSide(t, consent.Reactor(core.Codec, record), consent.Projector(core.Codec))
	settle := func(rs interface {
		WaitFor(testing.TB, eventlog.Position)
	}) eventlog.Position {
		for {
			head, err := core.Log.HeadPosition(ctx)
			must(err)
			rs.WaitFor(t, head)
			if again, _ := core.Log.HeadPosition(ctx); again == head {
				return head
			}
		}
	}
	head := settle(rs)
	one := domain.CustomerIDFromExternal("shop_a", "1")
	two := domain.CustomerIDFromExternal("shop_a", "2")
	evs, err := core.Log.ReadStream(ctx, domain.ConsentStream(one), 0, 100)
	must(err)
	if len(evs) != 4 { // email subscribed, sms pending, sms subscribed, email unsubscribed
		t.Fatalf("%d consent events for customer 1, want 4", len(evs))
	}
	q := consent.NewQueries(rs.DB())
	got, err := q.Consent(ctx, "shop_a", one)
	must(err)
	if e, s := got["email"], got["sms"]; e.State != "unsubscribed" || e.Consented || s.State != "subscribed" || !s.Consented ||
		e.Source != "platform" || !e.UpdatedAt.Equal(start.Add(3*time.Hour)) {
		t.Fatalf("customer 1: %+v", got)
	}
	if got, err := q.Consent(ctx, "shop_a", two); err != nil || got["email"].State != "subscribed" || len(got) != 1 {
		t.Fatalf("customer 2 (accepts_marketing): %+v %v", got, err)
	}

	rebuilt := core.ReadSide(t, consent.Reactor(core.Codec, record))
	if again := settle(rebuilt); again != head {
		t.Fatalf("rebuild appended: head %d → %d", head, again)
	}

	_, err = core.Commands.RecordCustomerErased(ctx, commands.RecordCustomerErased{Erased: domain.CustomerErased{
		ShopID: "shop_a", CustomerID: one, RequestEventID: uuid.NewString(), Subjects: []string{one}}}, meta)
	must(err)
	settle(rs)
	if got, err := q.Consent(ctx, "shop_a", one); err != nil || len(got) != 0 {
		t.Fatalf("erased customer: %+v %v", got, err)
	}
	if got, err := q.Consent(ctx, "shop_a", two); err != nil || len(got) != 1 {
		t.Fatalf("the other customer: %+v %v", got, err)
	}
}
