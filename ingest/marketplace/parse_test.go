package marketplace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParsePayloads(t *testing.T) {
	sent := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	nine := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		marketplace, file string
		kind              string
		orderID, status   string // "" for a notification
		total, currency   string
		resource          string
		at                time.Time
	}{
		{"etsy", "etsy_order_paid.json", "order.paid", "54321", "paid", "", "", "", sent},
		{"etsy", "etsy_order_shipped.json", "order.shipped", "54321", "shipped", "", "", "", sent},
		{"etsy", "etsy_order_paid_documented.json", "ORDER_PAID", "99887", "paid", "25.99", "USD", "", nine},
		{"etsy", "etsy_listing_updated.json", "listing.updated", "", "", "", "", "777", sent},
		{"tiktok_shop", "tiktok_order_status_change.json", "1", "576460000000000001", "AWAITING_SHIPMENT", "", "", "", nine},
		{"tiktok_shop", "tiktok_recipient_address_update.json", "3", "", "", "", "", "576460000000000001", nine.Add(time.Minute)},
		{"tiktok_shop", "tiktok_package_update.json", "4", "", "", "", "", "1152921504606846977", nine.Add(2 * time.Minute)},
		{"generic", "generic_order.json", "order.updated", "A-1001", "shipped", "25.50", "eur", "", nine},
		{"generic", "generic_notification.json", "listing.suppressed", "", "", "", "", "SKU-77", nine.Add(5 * time.Minute)},
	}
	for _, c := range cases {
		n, err := contract(t, c.marketplace).Parse(readTestdata(t, c.file), sent)
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if n.Kind != c.kind || !n.OccurredAt.Equal(c.at) || n.ResourceID != c.resource {
			t.Errorf("%s: %+v", c.file, n)
		}
		switch {
		case c.orderID == "" && n.Order != nil:
			t.Errorf("%s: an order %+v", c.file, n.Order)
		case c.orderID != "" && (n.Order == nil || n.Order.ID != c.orderID || n.Order.Status != c.status || n.Order.Currency != c.currency):
			t.Errorf("%s: order %+v", c.file, n.Order)
		case c.total != "" && (n.Order.Total == nil || n.Order.Total.String() != c.total):
			t.Errorf("%s: total %v", c.file, n.Order.Total)
		case c.orderID != "" && c.total == "" && n.Order.Total != nil:
			t.Errorf("%s: total %v, want none", c.file, *n.Order.Total)
		}
	}
}

func TestParseRefusesWhatDoesNotFit(t *testing.T) {
	for _, c := range []struct{ marketplace, body string }{
		{"etsy", `{"event_type": "order.paid", "shop_id": 42`},
		{"etsy", `{"shop_id": 42}`},
		{"etsy", `{"event_type": "order.paid", "resource_url": "https://openapi.etsy.com/v3/application/shops/42"}`},
		{"etsy", `{"event_type": "order.paid", "data": {"receipt_id": 1, "grandtotal": {"amount": 1, "divisor": 3}}}`},
		{"tiktok_shop", `{"type": "x", "shop_id": "1", "data": {"order_id": {"nested": true}}}`},
		{"tiktok_shop", `{"shop_id": "1"}`},
		{"tiktok_shop", `{"type": 1, "data": {"order_id": "1"}}`},
		{"generic", `not json`},
		{"generic", `{"order": {"id": "1", "status": "paid"}}`},
		{"generic", `{"type": "order.updated", "order": {"id": "1", "status": "paid", "total": "1,00"}}`},
		{"generic", `["type"]`},
	} {
		_, err := contract(t, c.marketplace).Parse([]byte(c.body), time.Time{})
		if domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("%s %s: %v, want a validation failure", c.marketplace, c.body, err)
		}
		if err != nil && strings.Contains(err.Error(), "Ada") {
			t.Errorf("error repeats the payload: %v", err)
		}
	}
}
