// Package goldenshop delivers every commerce topic's fixture
// (ingest/shopify/testdata) through the real commerce receiver to a test
// core, for the golden and replay tests of the projections that fold
// commerce events. Tests only.
package goldenshop

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/ingest"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/internal/testenv"
)

// The golden shop: its id, domain (the one the fixtures name) and webhook
// secret.
const (
	ShopID = "shop_golden"
	Domain = "atelier-nord.myshopify.com"
	Secret = "golden-secret-0123456789"
)

// triggeredAt is every delivery's X-Commerce-Triggered-At; the receiver's
// clock reads an hour later, inside the window of destructive topics.
var triggeredAt = time.Date(2026, 3, 20, 8, 0, 0, 0, time.UTC)

type oneShop struct{}

func (oneShop) ShopByDomain(_ context.Context, d string) (*ingest.Shop, error) {
	if d != Domain {
		return nil, domain.NotFound("shop")
	}
	return &ingest.Shop{ID: ShopID, WebhookSecret: Secret}, nil
}

// fixtures is ingest/shopify/testdata, found from this file's place in
// the module (tests run in their own package's directory).
func fixtures(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("goldenshop: cannot locate the fixtures")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "ingest", "shopify", "testdata")
}

// DeliverAll posts every topic's fixture, signed, through the real
// commerce receiver in the specification's order, and returns the last
// position reached.
func DeliverAll(t testing.TB, core *testenv.Core) eventlog.Position {
	t.Helper()
	r := mux.NewRouter()
	ingest.NewCommerce(oneShop{}, core.Commands, 0).WithClock(func() time.Time { return triggeredAt.Add(time.Hour) }).Routes(r)
	srv := httptest.NewServer(r)
	defer srv.Close()
	dir := fixtures(t)
	var last eventlog.Position
	for _, topic := range shopify.Topics() {
		body, err := os.ReadFile(filepath.Join(dir, strings.ReplaceAll(topic, "/", "_")+".json"))
		if err != nil {
			t.Fatal(err)
		}
		path := "/webhooks/events"
		if topic == shopify.TopicAppScopesUpdate {
			path = "/webhooks/app/scopes_update"
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
		req.Header.Set(ingest.HeaderHMAC, ingest.SignCommerce([]byte(Secret), body))
		req.Header.Set(ingest.HeaderWebhookID, "golden-"+topic)
		req.Header.Set(ingest.HeaderTopic, topic)
		req.Header.Set(ingest.HeaderShopDomain, Domain)
		req.Header.Set(ingest.HeaderTriggeredAt, triggeredAt.Format(time.RFC3339))
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
