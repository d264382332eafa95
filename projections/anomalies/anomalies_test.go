package anomalies_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/anomalies"
)

var meta = commands.Meta{Actor: "test", Source: "system"}

type fixture struct {
	t    *testing.T
	core *testenv.Core
	n    int
}

func newFixture(t *testing.T) *fixture {
	start := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	var ticks atomic.Int64
	return &fixture{t: t, core: testenv.New(t, func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * time.Second) })}
}

func (f *fixture) projector() *testenv.ReadSide {
	cmds := f.core.Commands
	return f.core.ReadSide(f.t, anomalies.Projector(f.core.Codec,
		func(ctx context.Context, d domain.AnomalyDraft) error {
			_, _, err := cmds.RaiseAnomaly(ctx, commands.RaiseAnomaly{Draft: d}, meta)
			return err
		},
		func(ctx context.Context, shop, key string, cause anomalies.Trigger, reason string) error {
			_, _, err := cmds.ResolveAnomaly(ctx, commands.ResolveAnomaly{ShopID: shop, DedupeKey: key, Cause: cause.ID, Reason: reason,
				CausePosition: cause.Position}, meta)
			return err
		}))
}

// emit appends ev of shop at occurredAt on a stream of its own.
func (f *fixture) emit(shop string, ev domain.Event, at time.Time) string {
	f.t.Helper()
	f.n++
	id := uuid.New()
	data, err := f.core.Codec.Encode(context.Background(), id, shop, ev, at, eventlog.Metadata{Actor: "test", Source: "system"})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.core.Log.Append(context.Background(), fmt.Sprintf("test-%d", f.n), eventlog.Any(), data); err != nil {
		f.t.Fatal(err)
	}
	return id.String()
}

// settle waits until rs reached the head and the head stopped moving.
func (f *fixture) settle(rs *testenv.ReadSide) eventlog.Position {
	f.t.Helper()
	for {
		head, err := f.core.Log.HeadPosition(context.Background())
		if err != nil {
			f.t.Fatal(err)
		}
		rs.WaitFor(f.t, head)
		if again, _ := f.core.Log.HeadPosition(context.Background()); again == head {
			return head
		}
	}
}

// history renders a dedupe key's stream: "Raised(kind severity) Resolved(reason)".
func (f *fixture) history(shop, key string) string {
	f.t.Helper()
	evs, err := f.core.Log.ReadStream(context.Background(), domain.AnomalyStream(shop, key), 0, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		d, err := f.core.Codec.Decode(context.Background(), &e)
		if err != nil {
			f.t.Fatal(err)
		}
		switch ev := d.Event.(type) {
		case *domain.AnomalyRaised:
			out = append(out, fmt.Sprintf("Raised(%s %s)", ev.Kind, ev.Severity))
		case *domain.AnomalyResolved:
			out = append(out, fmt.Sprintf("Resolved(%s)", ev.Reason))
		}
	}
	return strings.Join(out, " ")
}

func (f *fixture) expect(shop, key, want string) {
	f.t.Helper()
	if got := f.history(shop, key); got != want {
		f.t.Errorf("%s: %q, want %q", key, got, want)
	}
}

// TestTemplatesAndQuality: paused, paused again, approved, rejected;
// YELLOW, RED (resolves yellow), GREEN (resolves red); a rebuild of the
// reactor records nothing more.
func TestTemplatesAndQuality(t *testing.T) {
	f := newFixture(t)
	at := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	tpl := func(event string) domain.Event {
		return &domain.WhatsAppTemplateStatusUpdated{ShopID: "shop_a", TemplateID: "111", Name: "order_update", Event: event,
			State: domain.TemplateState(event), At: at}
	}
	q := func(rating string) domain.Event {
		return &domain.WhatsAppPhoneQualityUpdated{ShopID: "shop_a", DisplayPhoneNumber: "15550783881", Rating: rating, At: at}
	}
	for _, ev := range []domain.Event{tpl("PAUSED"), tpl("PAUSED"), tpl("APPROVED"), tpl("REJECTED"),
		q("YELLOW"), q("YELLOW"), q("RED"), q("ULTRAVIOLET"), q("GREEN")} {
		f.emit("shop_a", ev, at)
	}
	f.emit("shop_a", &domain.WhatsAppTemplateStatusUpdated{ShopID: "shop_a", TemplateID: "222", Event: "DISABLED",
		State: domain.TemplateState("DISABLED"), At: at}, at)
	live := f.projector()
	head := f.settle(live)
	f.expect("shop_a", "template:111",
		"Raised(template_paused P1) Resolved(the template was approved) Raised(template_rejected P1)")
	f.expect("shop_a", "template:222", "Raised(template_rejected P1)")
	f.expect("shop_a", "quality_yellow:15550783881", "Raised(number_quality_yellow P2) Resolved(the quality dropped to RED)")
	f.expect("shop_a", "quality_red:15550783881", "Raised(number_quality_red P1) Resolved(the quality is GREEN again)")
	f.expect("shop_b", "template:111", "")

	rebuilt := f.projector()
	if got := f.settle(rebuilt); got != head {
		t.Fatalf("a rebuild appended: head %d → %d", head, got)
	}
}

// TestWebhookSubscriptions: failing twice raises one P2; recovery
// resolves it; failing again raises a new one; disabled for failures
// raises the P1 and resolves the P2; enabling resolves the P1; the
// merchant's own disabling raises nothing.
func TestWebhookSubscriptions(t *testing.T) {
	f := newFixture(t)
	at := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	const sub = "whs_1"
	failing := func(level int) domain.Event {
		return &domain.WebhookSubscriptionFailing{SubscriptionID: sub, ShopID: "shop_a", FailingSince: at, DisableAt: at.Add(120 * time.Hour),
			Level: level, RaisedAt: at}
	}
	for _, ev := range []domain.Event{
		failing(1), failing(2),
		&domain.WebhookSubscriptionRecovered{SubscriptionID: sub, ShopID: "shop_a", FailingSince: at, RecoveredAt: at},
		failing(1),
		&domain.WebhookSubscriptionDisabled{SubscriptionID: sub, ShopID: "shop_a", Reason: domain.WebhookDisabledFailing, DisabledAt: at},
		&domain.WebhookSubscriptionEnabled{SubscriptionID: sub, ShopID: "shop_a", EnabledAt: at},
		&domain.WebhookSubscriptionDisabled{SubscriptionID: sub, ShopID: "shop_a", Reason: domain.WebhookDisabledByMerchant, DisabledAt: at},
		&domain.WebhookSubscriptionDisabled{SubscriptionID: "whs_2", ShopID: "shop_a", Reason: domain.WebhookDisabledGone, Status: 410, DisabledAt: at},
		&domain.WebhookSubscriptionDeleted{SubscriptionID: "whs_2", ShopID: "shop_a", DeletedAt: at},
	} {
		f.emit("shop_a", ev, at)
	}
	f.settle(f.projector())
	f.expect("shop_a", "webhook_failing:"+sub, "Raised(webhook_subscription_failing P2) Resolved(a delivery succeeded) "+
		"Raised(webhook_subscription_failing P2) Resolved(the subscription was disabled)")
	f.expect("shop_a", "webhook_disabled:"+sub, "Raised(webhook_subscription_disabled P1) Resolved(enabled)")
	f.expect("shop_a", "webhook_disabled:whs_2", "Raised(webhook_subscription_disabled P1) Resolved(deleted)")
}

// TestDataExports: a failed attempt more than seven days before the
// request's deadline raises nothing; within them, one P1 however many
// attempts fail; the completion resolves it.
func TestDataExports(t *testing.T) {
	f := newFixture(t)
	received := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	reqEvent := f.emit("shop_a", &domain.CustomerDataRequested{ShopID: "shop_a", RequestID: "9001",
		PrivacyCustomer: domain.PrivacyCustomer{CustomerID: "cus_1", ExternalID: "1"}}, received)
	id := domain.GDPRRequestID("shop_a", reqEvent)
	failed := func(attempt int, at time.Time) domain.Event {
		return &domain.DataExportAttemptFailed{RequestID: id, ShopID: "shop_a", Attempt: attempt, Reason: "http_500", AttemptedAt: at,
			NextAttemptAt: at.Add(time.Hour)}
	}
	deadline := received.Add(domain.GDPRDeadline)
	f.emit("shop_a", failed(1, received.Add(time.Hour)), received)
	f.emit("shop_a", failed(2, deadline.Add(-anomalies.ExportWarning-time.Minute)), received)
	rs := f.projector()
	f.settle(rs)
	f.expect("shop_a", "export:"+id, "")
	f.emit("shop_a", failed(3, deadline.Add(-anomalies.ExportWarning)), received)
	f.emit("shop_a", failed(4, deadline.Add(-time.Hour)), received)
	f.emit("shop_a", &domain.GdprRequestCompleted{RequestID: id, ShopID: "shop_a", Kind: domain.GDPRKindDataRequest,
		Status: domain.GDPRStatusCompleted, CompletedAt: deadline}, received)
	f.settle(rs)
	f.expect("shop_a", "export:"+id, "Raised(data_request_export_failing P1) Resolved(the export was delivered)")
}
