package commerce_test

import (
	"context"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/commerce"
)

// Order actions fold into the order's actions, and the platform's webhooks
// confirm them whether they arrive before or after the platform's answer
// is recorded; the aggregate agrees with the read model.
func TestOrderActionsFoldAndConfirmEitherWay(t *testing.T) {
	core := testenv.New(t, nil)
	read := core.ReadSide(t, commerce.Projector(core.Codec))
	ctx, meta := context.Background(), commands.Meta{Actor: "test", Source: "api"}
	var last eventlog.Position
	track := func(res commands.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		last = max(last, res.Position)
	}
	const shop, ext = "shop_a", "7000"
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	snap := domain.OrderSnapshot{ExternalID: ext, Currency: "EUR", TotalPrice: 100 * domain.AmountScale, CreatedAt: created, UpdatedAt: created}
	record := func(topic string, s domain.OrderSnapshot) {
		t.Helper()
		track(core.Commands.RecordOrder(ctx, commands.RecordOrder{Snapshot: s, Delivered: commands.Delivered{ShopID: shop, Topic: topic,
			EventID: eventlog.DeterministicID("test", topic, s.UpdatedAt.String())}}, meta))
	}
	refundWebhook := func(refundExt string, amount domain.Amount) {
		t.Helper()
		track(core.Commands.RecordRefund(ctx, commands.RecordRefund{OrderExternalID: ext, Refund: domain.RefundRecorded{ExternalID: refundExt,
			Amount: amount, CreatedAt: created}, Delivered: commands.Delivered{ShopID: shop, Topic: "refunds/create",
			EventID: eventlog.DeterministicID("test", "refund", refundExt)}}, meta))
	}
	outcome := func(action string, out domain.ActionOutcome) {
		t.Helper()
		track(core.Commands.RecordOrderActionOutcome(ctx, commands.RecordOrderActionOutcome{ShopID: shop,
			OrderID: domain.OrderIDFromExternal(shop, ext), ActionID: action, Outcome: out}, meta))
	}
	refund := func(amount domain.Amount) string {
		t.Helper()
		res, target, err := core.Commands.RequestOrderRefund(ctx, commands.RequestOrderRefund{ShopID: shop, OrderID: domain.OrderIDFromExternal(shop, ext),
			Request: domain.RefundRequest{Amount: amount}}, meta)
		track(res, err)
		return target.ActionID
	}
	cancel := func() string {
		t.Helper()
		res, target, err := core.Commands.RequestOrderCancellation(ctx, commands.RequestOrderCancellation{ShopID: shop,
			OrderID: domain.OrderIDFromExternal(shop, ext), Request: domain.CancellationRequest{Reason: "STAFF"}}, meta)
		track(res, err)
		return target.ActionID
	}

	record("orders/create", snap)
	// The platform's refunds/create before its answer is recorded.
	first := refund(10 * domain.AmountScale)
	refundWebhook("r1", 10*domain.AmountScale)
	outcome(first, domain.ActionOutcome{PlatformRefundID: "r1"})
	// And after.
	second := refund(5 * domain.AmountScale)
	outcome(second, domain.ActionOutcome{PlatformRefundID: "r2"})
	refundWebhook("r2", 5*domain.AmountScale)
	// A refused cancellation, then one the platform's orders/updated
	// confirms.
	failed := cancel()
	outcome(failed, domain.ActionOutcome{FailureCode: "platform_rejected", FailureMessage: "the platform refused the operation"})
	done := cancel()
	outcome(done, domain.ActionOutcome{PlatformJobID: "gid://shopify/Job/1"})
	snap.UpdatedAt, snap.CancelledAt = created.Add(time.Hour), created.Add(time.Hour)
	record("orders/updated", snap)
	before := last
	outcome(done, domain.ActionOutcome{PlatformJobID: "again"})
	if last != before {
		t.Fatal("a second outcome of an action was recorded")
	}
	read.WaitFor(t, last)

	o, err := commerce.NewQueries(read.DB()).Order(ctx, shop, domain.OrderIDFromExternal(shop, ext))
	if err != nil {
		t.Fatal(err)
	}
	agg, err := core.Commands.LoadOrder(ctx, domain.OrderIDFromExternal(shop, ext))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{first: "confirmed", second: "confirmed", failed: "failed", done: "confirmed"}
	if len(o.Actions) != 4 {
		t.Fatalf("actions %+v", o.Actions)
	}
	for i, id := range []string{first, second, failed, done} {
		a := o.Actions[i]
		if a.ID != id || a.Status != want[id] || agg.ActionStatus(id) != want[id] {
			t.Errorf("action %d: %+v (aggregate %s), want %s %s", i, a, agg.ActionStatus(id), id, want[id])
		}
	}
	if o.Actions[0].PlatformRefundID != "r1" || o.Actions[0].ConfirmedAt.IsZero() || o.Actions[2].ErrorCode != "platform_rejected" ||
		o.Actions[3].PlatformJobID != "gid://shopify/Job/1" || o.Refunded != 15*domain.AmountScale || agg.Refundable() != 85*domain.AmountScale {
		t.Errorf("order %+v, refundable %s", o, agg.Refundable())
	}
}
