package marketplace

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// Headers of the generic contract.
const (
	HeaderGenericSignature = "X-Marketplace-Signature"
	HeaderGenericAccount   = "X-Marketplace-Account"
	HeaderGenericDelivery  = "X-Marketplace-Delivery-Id"
)

// generic is the contract for marketplaces without one of their own:
// X-Marketplace-Signature: sha256=<hex HMAC-SHA256 of the raw body>, the
// seller account in X-Marketplace-Account and the delivery id in
// X-Marketplace-Delivery-Id. It has no timestamp: repeats are caught by
// the delivery id.
func generic() *Contract {
	return &Contract{
		Name:      domain.MarketplaceGeneric,
		Account:   Locator{Header: HeaderGenericAccount},
		Delivery:  Locator{Header: HeaderGenericDelivery},
		Kind:      Locator{BodyField: "type"},
		Signature: HeaderGenericSignature,
		Prefix:    "sha256=",
		Signed:    SignedBody,
		Encoding:  EncodingHex,
		Secret:    SecretRaw,
		parse:     parseGeneric,
	}
}

// genericPayload is the generic contract's body:
// {"type":"order.updated","occurred_at":"2026-11-01T10:00:00Z",
// "order":{"id":"A-1","status":"shipped","total":"25.00","currency":"EUR"}}
// for an order; without "order" it is a notification, optionally about
// "resource_id". Any other field (a buyer, an address) is not read.
type genericPayload struct {
	Type       string   `json:"type"`
	OccurredAt flexTime `json:"occurred_at"`
	ResourceID flexID   `json:"resource_id"`
	Order      *struct {
		ID       flexID          `json:"id"`
		Status   string          `json:"status"`
		Total    json.RawMessage `json:"total"`
		Currency string          `json:"currency"`
	} `json:"order"`
}

// parseGeneric maps a generic body.
func parseGeneric(body []byte, _ time.Time) (Notice, error) {
	var p genericPayload
	if err := payload.Decode(body, &p); err != nil {
		return Notice{}, err
	}
	if strings.TrimSpace(p.Type) == "" {
		return Notice{}, domain.Invalid("type", "type is required")
	}
	n := Notice{Kind: p.Type, OccurredAt: time.Time(p.OccurredAt)}
	if p.Order == nil {
		n.ResourceID = string(p.ResourceID)
		return n, nil
	}
	total, err := decimal(p.Order.Total)
	if err != nil {
		return Notice{}, err
	}
	n.Order = &Order{ID: string(p.Order.ID), Status: strings.TrimSpace(p.Order.Status), Total: total, Currency: p.Order.Currency}
	return n, nil
}
