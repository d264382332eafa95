package commerce_test

import (
	"encoding/json"
	"flag"
	"reflect"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/internal/goldenshop"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/commerce"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// tables are the commerce read model's tables and a stable order of each.
var tables = map[string]string{
	"orders": "order_id", "refunds": "refund_id", "products": "product_id",
	"product_variants": "shop_id, variant_id", "inventory_levels": "level_id", "carts": "cart_id",
	"checkouts": "checkout_id", "subscription_contracts": "subscription_id",
	"billing_attempts": "subscription_id, attempt_id", "themes": "theme_id", "theme_changes": "change_id", "privacy_requests": "event_id",
}

func dumpAll(t *testing.T, rs *testenv.ReadSide) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for table, order := range tables {
		out[table] = testenv.Dump(t, rs.DB(), table, order)
	}
	return out
}

// TestReadModelMatchesGoldenAndReplay: every topic's fixture builds the
// read model in testdata/commerce.golden.json while the projector follows
// the log live, and a rebuild from position 0 in a new store (batched
// catch-up) gives the same rows, row for row.
func TestReadModelMatchesGoldenAndReplay(t *testing.T) {
	clock := time.Date(2026, 3, 20, 9, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { return clock })
	live := core.ReadSide(t, commerce.Projector(core.Codec))
	last := goldenshop.DeliverAll(t, core)
	live.WaitFor(t, last)
	got := dumpAll(t, live)
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Golden(t, "testdata/commerce.golden.json", b, *update)

	rebuilt := core.ReadSide(t, commerce.Projector(core.Codec))
	rebuilt.WaitFor(t, last)
	if again := dumpAll(t, rebuilt); !reflect.DeepEqual(got, again) {
		b2, _ := json.MarshalIndent(again, "", "  ")
		t.Fatalf("the rebuilt read model differs from the live one:\n%s", b2)
	}
}
