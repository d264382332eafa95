package commerce_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/ingest"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/commerce"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// tables are the commerce read model's tables and a stable order of each.
var tables = map[string]string{
	"orders": "order_id", "refunds": "refund_id", "products": "product_id",
	"product_variants": "shop_id, variant_id", "inventory_levels": "level_id", "carts": "cart_id",
	"checkouts": "checkout_id", "subscription_contracts": "subscription_id",
	"billing_attempts": "subscription_id, attempt_id", "themes": "theme_id", "privacy_requests": "event_id",
}

type oneShop struct{}

func (oneShop) ShopByDomain(_ context.Context, d string) (*ingest.Shop, error) {
	if d != "golden.example" {
		return nil, domain.NotFound("shop")
	}
	return &ingest.Shop{ID: "shop_golden", WebhookSecret: "golden-secret-0123456789"}, nil
}

// deliverAll posts every topic's fixture through the real commerce
// receiver, in the specification's order, and returns the last position.
func deliverAll(t *testing.T, core *testenv.Core) eventlog.Position {
	t.Helper()
	r := mux.NewRouter()
	ingest.NewCommerce(oneShop{}, core.Commands, 0).Routes(r)
	srv := httptest.NewServer(r)
	defer srv.Close()
	var last eventlog.Position
	for _, topic := range shopify.Topics() {
		body, err := os.ReadFile(filepath.Join("..", "..", "ingest", "shopify", "testdata", strings.ReplaceAll(topic, "/", "_")+".json"))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/events", bytes.NewReader(body))
		req.Header.Set(ingest.HeaderHMAC, ingest.SignCommerce([]byte("golden-secret-0123456789"), body))
		req.Header.Set(ingest.HeaderWebhookID, "golden-"+topic)
		req.Header.Set(ingest.HeaderTopic, topic)
		req.Header.Set(ingest.HeaderShopDomain, "golden.example")
		req.Header.Set(ingest.HeaderTriggeredAt, "2026-03-20T08:00:00Z")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", topic, resp.StatusCode)
		}
		var pos eventlog.Position
		if err := json.Unmarshal([]byte(resp.Header.Get("X-Event-Position")), &pos); err != nil {
			t.Fatal(err)
		}
		last = max(last, pos)
	}
	return last
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
	last := deliverAll(t, core)
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
