package outbox_test

import (
	"context"
	"testing"

	"github.com/cgp-platform/cgp/readmodel/versioned/outbox"
)

// TestQueuedCountsTheChangesNotShipped: the changes of named rows and of a
// shop wait in the outbox until shipped; a key with an empty id is left
// out.
func TestQueuedCountsTheChangesNotShipped(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	e.apply(t, 1, `INSERT INTO attribution_orders (order_id, shop_id, revenue) VALUES ('o1', 's1', 10), ('o2', 's2', 20)`)
	e.apply(t, 2, `UPDATE attribution_orders SET revenue = 11 WHERE order_id = 'o1'`)
	check := func(when string, wantO1, wantS1 int) {
		t.Helper()
		if n, err := outbox.QueuedKeys(ctx, e.rm.DB(), "attribution_orders", []any{"s1", "o1"}, []any{"s1", ""}); err != nil || n != wantO1 {
			t.Errorf("%s: %d changes of o1 queued (%v), want %d", when, n, err, wantO1)
		}
		if n, err := outbox.QueuedShop(ctx, e.rm.DB(), "s1"); err != nil || n != wantS1 {
			t.Errorf("%s: %d changes of s1 queued (%v), want %d", when, n, err, wantS1)
		}
	}
	check("before shipping", 2, 2)
	if n, err := outbox.QueuedKeys(ctx, e.rm.DB(), "attribution_credits", []any{"s1", "o1"}); err != nil || n != 0 {
		t.Errorf("another table: %d (%v)", n, err)
	}
	e.ship(t)
	check("after shipping", 0, 0)
}
