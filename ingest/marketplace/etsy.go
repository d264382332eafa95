package marketplace

import (
	"net/url"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// Standard Webhooks headers (https://www.standardwebhooks.com).
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// StandardWebhooksTolerance is the replay window the specification's
// libraries use.
const StandardWebhooksTolerance = 5 * time.Minute

// etsy follows the Standard Webhooks specification, which Etsy's Open API
// v3 webhooks use: webhook-id, webhook-timestamp and webhook-signature
// ("v1,<base64 HMAC-SHA256 of id.timestamp.body>"), a whsec_ secret, a
// 5-minute window. Etsy names the seller's shop in the body (shop_id).
func etsy() *Contract {
	return &Contract{
		Name:      domain.MarketplaceEtsy,
		Account:   Locator{BodyField: "shop_id"},
		Delivery:  Locator{Header: HeaderWebhookID},
		Kind:      Locator{BodyField: "event_type"},
		Signature: HeaderWebhookSignature,
		Timestamp: HeaderWebhookTimestamp,
		Tolerance: StandardWebhooksTolerance,
		Signed:    SignedIDTimestampBody,
		Encoding:  EncodingStandardWebhooks,
		Secret:    SecretStandardWebhooks,
		parse:     parseEtsy,
	}
}

// etsyPayload is an Etsy webhook body. Etsy sends
// {"event_type":"order.paid","resource_url":".../shops/42/receipts/7","shop_id":42};
// the nested form its documentation showed first (event_id, created_at,
// data.receipt_id, data.grandtotal) is read too. Buyer fields are not read.
type etsyPayload struct {
	EventType   string   `json:"event_type"`
	ResourceURL string   `json:"resource_url"`
	CreatedAt   flexTime `json:"created_at"`
	Data        *struct {
		ReceiptID  flexID    `json:"receipt_id"`
		Status     string    `json:"status"`
		Grandtotal *etsyCash `json:"grandtotal"`
	} `json:"data"`
}

// etsyCash is Etsy's Money: an amount in minor units with its divisor.
type etsyCash struct {
	Amount       int64  `json:"amount"`
	Divisor      int64  `json:"divisor"`
	CurrencyCode string `json:"currency_code"`
}

// parseEtsy maps an Etsy body: event types order.<status> (or
// ORDER_<STATUS>) are order updates of the receipt, others notifications
// about the resource of resource_url.
func parseEtsy(body []byte, sentAt time.Time) (Notice, error) {
	var p etsyPayload
	if err := payload.Decode(body, &p); err != nil {
		return Notice{}, err
	}
	if strings.TrimSpace(p.EventType) == "" {
		return Notice{}, domain.Invalid("event_type", "event_type is required")
	}
	n := Notice{Kind: p.EventType, OccurredAt: firstTime(time.Time(p.CreatedAt), sentAt)}
	resource := lastSegment(p.ResourceURL, "")
	status, isOrder := etsyOrderStatus(p.EventType)
	if !isOrder {
		n.ResourceID = resource
		return n, nil
	}
	o := &Order{ID: lastSegment(p.ResourceURL, "receipts"), Status: status}
	if p.Data != nil {
		o.ID = first(p.Data.ReceiptID, flexID(o.ID))
		if p.Data.Grandtotal != nil {
			total, err := minorUnits(p.Data.Grandtotal.Amount, p.Data.Grandtotal.Divisor)
			if err != nil {
				return Notice{}, err
			}
			o.Total, o.Currency = total, p.Data.Grandtotal.CurrencyCode
		}
	}
	if o.ID == "" {
		return Notice{}, domain.Invalid("order_id", "no receipt id in resource_url or data.receipt_id")
	}
	n.Order = o
	return n, nil
}

// etsyOrderStatus reads "order.paid" and "ORDER_PAID" as status "paid".
func etsyOrderStatus(eventType string) (string, bool) {
	t := strings.ToLower(strings.TrimSpace(eventType))
	for _, prefix := range []string{"order.", "order_"} {
		if s, ok := strings.CutPrefix(t, prefix); ok && s != "" {
			return s, true
		}
	}
	return "", false
}

// lastSegment returns the path segment of rawURL after the segment named
// after ("" for the last segment); "" when there is none.
func lastSegment(rawURL, after string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if after == "" {
		return parts[len(parts)-1]
	}
	for i := len(parts) - 2; i >= 0; i-- {
		if parts[i] == after {
			return parts[i+1]
		}
	}
	return ""
}
