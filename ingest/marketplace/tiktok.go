package marketplace

import (
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// HeaderAuthorization carries TikTok Shop's signature.
const HeaderAuthorization = "Authorization"

// TikTokOrderStatusChange is the TikTok Shop webhook type of an order's
// status change (ORDER_STATUS_CHANGE).
const TikTokOrderStatusChange = "1"

// tiktokShop follows TikTok Shop's documented webhook signature: the
// Authorization header holds the lowercase hex HMAC-SHA256, keyed with the
// app secret, of the app key followed by the raw body. It has no timestamp,
// so there is no replay window: a replay carries the same
// tts_notification_id and appends nothing. The seller's shop is named in
// the body (shop_id).
func tiktokShop() *Contract {
	return &Contract{
		Name:           domain.MarketplaceTikTokShop,
		Account:        Locator{BodyField: "shop_id"},
		Delivery:       Locator{BodyField: "tts_notification_id"},
		Kind:           Locator{BodyField: "type"},
		Signature:      HeaderAuthorization,
		Signed:         SignedAppKeyBody,
		Encoding:       EncodingHex,
		Secret:         SecretRaw,
		AppKeyRequired: true,
		parse:          parseTikTok,
	}
}

// tiktokPayload is a TikTok Shop webhook body:
// {"type":1,"tts_notification_id":"…","shop_id":"…","timestamp":1644412885,
// "data":{"order_id":"…","order_status":"AWAITING_SHIPMENT","update_time":…}}.
// Only ids, statuses and times are read from data (type 3, the recipient
// address update, carries an address that is never read).
type tiktokPayload struct {
	Type      flexID   `json:"type"`
	Timestamp flexTime `json:"timestamp"`
	Data      *struct {
		OrderID        flexID   `json:"order_id"`
		OrderStatus    string   `json:"order_status"`
		UpdateTime     flexTime `json:"update_time"`
		PackageID      flexID   `json:"package_id"`
		ProductID      flexID   `json:"product_id"`
		ReturnID       flexID   `json:"return_id"`
		ReverseOrderID flexID   `json:"reverse_order_id"`
		ConversationID flexID   `json:"conversation_id"`
	} `json:"data"`
}

// parseTikTok maps a TikTok Shop body: type 1 with an order id and status
// is an order update; any other type is a notification about the first id
// its data names.
func parseTikTok(body []byte, _ time.Time) (Notice, error) {
	var p tiktokPayload
	if err := payload.Decode(body, &p); err != nil {
		return Notice{}, err
	}
	if p.Type == "" {
		return Notice{}, domain.Invalid("type", "type is required")
	}
	n := Notice{Kind: string(p.Type), OccurredAt: time.Time(p.Timestamp)}
	if p.Data == nil {
		return n, nil
	}
	n.OccurredAt = firstTime(time.Time(p.Data.UpdateTime), n.OccurredAt)
	if n.Kind == TikTokOrderStatusChange {
		o := &Order{ID: string(p.Data.OrderID), Status: strings.TrimSpace(p.Data.OrderStatus)}
		if o.ID == "" || o.Status == "" {
			return Notice{}, domain.Invalid("data", "an order status change needs data.order_id and data.order_status")
		}
		n.Order = o
		return n, nil
	}
	d := p.Data
	n.ResourceID = first(d.OrderID, d.PackageID, d.ProductID, d.ReturnID, d.ReverseOrderID, d.ConversationID)
	return n, nil
}
