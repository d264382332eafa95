package attribution_test

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
	"github.com/cgp-platform/cgp/projections/attribution"
)

var update = flag.Bool("update", false, "rewrite the golden files")

type oneShop struct{}

func (oneShop) ShopByDomain(_ context.Context, d string) (*ingest.Shop, error) {
	if d != "golden.example" {
		return nil, domain.NotFound("shop")
	}
	return &ingest.Shop{ID: "shop_golden", WebhookSecret: "golden-secret-0123456789"}, nil
}

// deliverAll posts every commerce topic's fixture through the real
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

// TestReadModelMatchesGoldenAndReplay: every commerce topic's fixture
// (checkouts, orders, refunds among them) builds the read model in
// testdata/attribution.golden.json while the projector follows the log
// live, and a rebuild from position 0 gives the same rows.
func TestReadModelMatchesGoldenAndReplay(t *testing.T) {
	clock := time.Date(2026, 3, 20, 9, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { return clock })
	live := core.ReadSide(t, attribution.Projector(core.Codec))
	last := deliverAll(t, core)
	live.WaitFor(t, last)
	got := dumpAll(t, live)
	if len(got["attribution_credits"]) == 0 || len(got["touchpoints"]) == 0 {
		t.Fatalf("the fixtures gave no credits or touchpoints: %v", got)
	}
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Golden(t, "testdata/attribution.golden.json", b, *update)

	rebuilt := core.ReadSide(t, attribution.Projector(core.Codec))
	rebuilt.WaitFor(t, last)
	if again := dumpAll(t, rebuilt); !reflect.DeepEqual(got, again) {
		b2, _ := json.MarshalIndent(again, "", "  ")
		t.Fatalf("the rebuilt read model differs from the live one:\n%s", b2)
	}
}
