package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	logsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/internal/testenv"
)

// oneShop finds the single shop of these tests by its domain.
type oneShop struct{ shop Shop }

func (o oneShop) ShopByDomain(_ context.Context, d string) (*Shop, error) {
	if d != "receiver.example" {
		return nil, domain.NotFound("shop")
	}
	return &o.shop, nil
}

// receiver is the commerce receiver over a real event log, vault and
// command handler.
type receiver struct {
	srv   *httptest.Server
	log   *logsqlite.Log
	codec *envelope.Codec
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	core := testenv.New(t, nil)
	r := mux.NewRouter()
	NewCommerce(oneShop{Shop{ID: "shop_receiver", WebhookSecret: "receiver-secret-0123"}}, core.Commands, 0).Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return &receiver{srv: srv, log: core.Log, codec: core.Codec}
}

func (rc *receiver) post(t *testing.T, topic, id string, body []byte) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, rc.srv.URL+"/webhooks/events", bytes.NewReader(body))
	req.Header.Set(HeaderHMAC, SignCommerce([]byte("receiver-secret-0123"), body))
	req.Header.Set(HeaderWebhookID, id)
	req.Header.Set(HeaderTopic, topic)
	req.Header.Set(HeaderShopDomain, "receiver.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// became returns the event a delivery became and its decoded form; ok is
// false when the delivery is not in the log.
func (rc *receiver) became(t *testing.T, deliveryID string) (typ string, ev domain.Event, ok bool) {
	t.Helper()
	evs, err := rc.log.ReadAll(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	id := eventlog.DeterministicID("commerce", "shop_receiver", deliveryID)
	for i := range evs {
		if evs[i].ID != id {
			continue
		}
		d, err := rc.codec.Decode(context.Background(), &evs[i])
		if err != nil {
			t.Fatal(err)
		}
		return evs[i].Type, d.Event, true
	}
	return "", nil, false
}

// eventOf returns the type of the event a delivery became and, for a
// recorded delivery, its reason.
func (rc *receiver) eventOf(t *testing.T, deliveryID string) (typ, reason string) {
	t.Helper()
	typ, ev, _ := rc.became(t, deliveryID)
	if rec, ok := ev.(*domain.WebhookDeliveryRecorded); ok {
		reason = rec.Reason
	}
	return typ, reason
}

// TestPanickingMapperParksTheDelivery: a mapper that panics does not take
// the receiver down or lose the delivery; it is recorded as parked and the
// next deliveries flow.
func TestPanickingMapperParksTheDelivery(t *testing.T) {
	topicMappers["test/panics"] = func(context.Context, Recorder, Delivery) (commands.Result, error) {
		var m map[string]int
		m["boom"]++ // a nil map write: a real runtime panic
		return commands.Result{}, nil
	}
	t.Cleanup(func() { delete(topicMappers, "test/panics") })
	rc := newReceiver(t)
	if resp := rc.post(t, "test/panics", "p1", []byte(`{"id": 1}`)); resp.StatusCode != http.StatusOK {
		t.Fatalf("panicking mapper: %d", resp.StatusCode)
	}
	if typ, reason := rc.eventOf(t, "p1"); typ != "WebhookDeliveryRecorded" || reason != ReasonParked {
		t.Fatalf("parked delivery recorded as %q (%q)", typ, reason)
	}
	order, err := os.ReadFile("shopify/testdata/orders_create.json")
	if err != nil {
		t.Fatal(err)
	}
	if resp := rc.post(t, "orders/create", "p2", order); resp.StatusCode != http.StatusOK {
		t.Fatalf("next delivery: %d", resp.StatusCode)
	}
	if typ, _ := rc.eventOf(t, "p2"); typ != "OrderRecorded" {
		t.Fatalf("next delivery recorded as %q", typ)
	}
}

// TestLogUnavailableAnswers503: when the log cannot take the write, the
// platform gets 503 with Retry-After (and retries), never a 2xx or a 500.
func TestLogUnavailableAnswers503(t *testing.T) {
	rc := newReceiver(t)
	if err := rc.log.Close(); err != nil {
		t.Fatal(err)
	}
	resp := rc.post(t, "customers/create", "u1", []byte(`{"id": 42, "email": "a@example.com"}`))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("log closed: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp = rc.post(t, "no/such-topic", "u2", []byte(`{}`))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("unknown topic with the log closed: %d", resp.StatusCode)
	}
}

// TestUnmappedDeliveriesAreRecorded: a payload that cannot be mapped, a
// topic the service does not know and a draft theme's update are all
// acknowledged and kept, each with its reason.
func TestUnmappedDeliveriesAreRecorded(t *testing.T) {
	rc := newReceiver(t)
	for _, c := range []struct{ topic, id, body, reason string }{
		{"orders/create", "m1", `{"id": 1, "line_items": [`, ReasonUnprocessable},
		{"orders/create", "m2", `{"id": 1, "total_price": "lots"}`, ReasonUnprocessable},
		{"orders/teleported", "m3", `{"id": 1}`, ReasonUnhandledTopic},
		{"themes/update", "m4", `{"id": 7, "name": "Dev copy", "role": "development"}`, ReasonIgnored},
	} {
		if resp := rc.post(t, c.topic, c.id, []byte(c.body)); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d", c.topic, c.body, resp.StatusCode)
		}
		if typ, reason := rc.eventOf(t, c.id); typ != "WebhookDeliveryRecorded" || reason != c.reason {
			t.Errorf("%s %s: recorded as %q (%q), want reason %q", c.topic, c.body, typ, reason, c.reason)
		}
	}
}

// recorded returns the WebhookDeliveryRecorded a delivery became.
func (rc *receiver) recorded(t *testing.T, deliveryID string) *domain.WebhookDeliveryRecorded {
	t.Helper()
	typ, ev, ok := rc.became(t, deliveryID)
	if !ok {
		t.Fatalf("%s not in the log", deliveryID)
	}
	rec, isRecorded := ev.(*domain.WebhookDeliveryRecorded)
	if !isRecorded {
		t.Fatalf("%s became %s", deliveryID, typ)
	}
	return rec
}

// TestRecordedDeliveryKeepsWhyAndWhen: a recorded delivery's triggered_at
// is null when the sender did not say (never the zero time), and a refused
// or unprocessable one says why without quoting the body.
func TestRecordedDeliveryKeepsWhyAndWhen(t *testing.T) {
	rc := newReceiver(t)
	rc.post(t, "orders/teleported", "w1", []byte(`{"id": 1}`))
	if rec := rc.recorded(t, "w1"); rec.TriggeredAt != nil {
		t.Errorf("unknown triggered-at recorded as %v, want null", rec.TriggeredAt)
	}
	b, err := json.Marshal(domain.WebhookDeliveryRecorded{Reason: ReasonUnhandledTopic})
	if err != nil || !strings.Contains(string(b), `"triggered_at":null`) {
		t.Errorf("encoded without triggered-at: %s %v", b, err)
	}
	// A data_request body as customers/redact: the member at fault.
	body, err := os.ReadFile("shopify/testdata/customers_data_request.json")
	if err != nil {
		t.Fatal(err)
	}
	rc.post(t, "customers/redact", "w2", body)
	if rec := rc.recorded(t, "w2"); rec.Reason != ReasonUnprocessable || rec.Detail != "orders_to_redact: required by customers/redact (an array)" {
		t.Errorf("replayed body recorded as %q %q", rec.Reason, rec.Detail)
	}
	// The right shape without X-Commerce-Triggered-At: refused, and why.
	body, err = os.ReadFile("shopify/testdata/shop_redact.json")
	if err != nil {
		t.Fatal(err)
	}
	rc.post(t, "shop/redact", "w3", bytes.ReplaceAll(body, []byte("atelier-nord.myshopify.com"), []byte("receiver.example")))
	if rec := rc.recorded(t, "w3"); rec.Reason != ReasonRefused || !strings.Contains(rec.Detail, HeaderTriggeredAt) || rec.TriggeredAt != nil {
		t.Errorf("shop/redact without triggered-at recorded as %q %q %v", rec.Reason, rec.Detail, rec.TriggeredAt)
	}
}
