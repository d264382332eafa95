package commands_test

import (
	"context"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
)

// TestLikelyNewFallsBackWhenTheStreamExists: a */create delivery tries its
// append without reading the stream; when an update arrived first, the
// append's "no stream" fails and the command decides against the real
// stream (here: the create is older, so it is stale).
func TestLikelyNewFallsBackWhenTheStreamExists(t *testing.T) {
	core := testenv.New(t, nil)
	ctx := context.Background()
	at := func(h int) time.Time { return time.Date(2026, 3, 9, h, 0, 0, 0, time.UTC) }
	snap := func(updated time.Time, status string) domain.OrderSnapshot {
		return domain.OrderSnapshot{ExternalID: "42", FinancialStatus: status, CreatedAt: at(9), UpdatedAt: updated}
	}
	cmd := func(delivery, topic string, likelyNew bool, s domain.OrderSnapshot) commands.RecordOrder {
		return commands.RecordOrder{Delivered: commands.Delivered{ShopID: "shop_x", Topic: topic, LikelyNew: likelyNew,
			EventID: eventlog.DeterministicID("test", delivery)}, Snapshot: s}
	}
	if _, err := core.Commands.RecordOrder(ctx, cmd("u", "orders/updated", false, snap(at(12), "paid")), meta); err != nil {
		t.Fatal(err)
	}
	res, err := core.Commands.RecordOrder(ctx, cmd("c", "orders/create", true, snap(at(10), "pending")), meta)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := core.Log.ReadStream(ctx, domain.OrderStream(res.ID), 0, 10)
	if err != nil || len(evs) != 2 {
		t.Fatalf("stream: %d events, %v", len(evs), err)
	}
	d, err := core.Codec.Decode(ctx, &evs[1])
	if err != nil {
		t.Fatal(err)
	}
	if o := d.Event.(*domain.OrderRecorded); !o.Stale || o.First {
		t.Fatalf("late create: stale %v first %v", o.Stale, o.First)
	}
	// A repeat of the create with the stream now holding it appends nothing.
	if _, err := core.Commands.RecordOrder(ctx, cmd("c", "orders/create", true, snap(at(10), "pending")), meta); err != nil {
		t.Fatal(err)
	}
	if n := streamLen(t, core.Log, domain.OrderStream(res.ID)); n != 2 {
		t.Fatalf("after a repeat: %d events", n)
	}
}
