package shopify

import (
	"encoding/json"
	"strings"

	"github.com/cgp-platform/cgp/ingest/payload"
)

// SubscriptionContract is a subscription_contracts/create or
// subscription_contracts/update payload.
type SubscriptionContract struct {
	ID                string
	AdminGraphQLAPIID string // gid://shopify/SubscriptionContract/…
	CustomerID        string
	Status            string // active, paused, cancelled, expired, failed
	BillingPolicy     BillingPolicy
	OriginOrderID     string // the order that started the contract
	CurrencyCode      string // ISO 4217
}

// BillingPolicy is how often a contract bills: every IntervalCount
// Intervals (day, week, month, year).
type BillingPolicy struct {
	Interval      string
	IntervalCount int
}

// ParseSubscriptionContract parses a subscription_contracts/create or
// subscription_contracts/update payload. It rejects a payload without a
// contract id.
func ParseSubscriptionContract(body []byte) (SubscriptionContract, error) {
	var r struct {
		ID                json.Number `json:"id"`
		AdminGraphQLAPIID string      `json:"admin_graphql_api_id"`
		CustomerID        json.Number `json:"customer_id"`
		Status            string      `json:"status"`
		BillingPolicy     *struct {
			Interval      string `json:"interval"`
			IntervalCount int    `json:"interval_count"`
		} `json:"billing_policy"`
		OriginOrderID json.Number `json:"origin_order_id"`
		CurrencyCode  string      `json:"currency_code"`
	}
	if err := payload.Decode(body, &r); err != nil {
		return SubscriptionContract{}, err
	}
	var c conv
	sc := SubscriptionContract{
		ID:                c.id("id", r.ID),
		AdminGraphQLAPIID: strings.TrimSpace(r.AdminGraphQLAPIID),
		CustomerID:        c.optID("customer_id", r.CustomerID),
		Status:            r.Status,
		OriginOrderID:     c.optID("origin_order_id", r.OriginOrderID),
		CurrencyCode:      r.CurrencyCode,
	}
	if bp := r.BillingPolicy; bp != nil {
		sc.BillingPolicy = BillingPolicy{Interval: bp.Interval, IntervalCount: bp.IntervalCount}
	}
	if c.err != nil {
		return SubscriptionContract{}, c.err
	}
	return sc, nil
}

// BillingAttempt is a subscription_billing_attempts/success or
// subscription_billing_attempts/failure payload.
type BillingAttempt struct {
	ID                     string
	SubscriptionContractID string
	OrderID                string // the order created; "" on failure
	Ready                  bool   // false while the attempt is processing
	ErrorMessage           string
	ErrorCode              string // payment_method_declined, insufficient_funds, …
	IdempotencyKey         string
}

// ParseBillingAttempt parses a subscription_billing_attempts/success or
// subscription_billing_attempts/failure payload. The platform sends the
// attempt's id as null in some payloads (its published example among
// them); the idempotency key identifies the attempt then. It rejects a
// payload without the contract id, or without both the attempt id and the
// idempotency key.
func ParseBillingAttempt(body []byte) (BillingAttempt, error) {
	var r struct {
		ID                     json.Number `json:"id"`
		SubscriptionContractID json.Number `json:"subscription_contract_id"`
		OrderID                json.Number `json:"order_id"`
		Ready                  bool        `json:"ready"`
		ErrorMessage           string      `json:"error_message"`
		ErrorCode              string      `json:"error_code"`
		IdempotencyKey         string      `json:"idempotency_key"`
	}
	if err := payload.Decode(body, &r); err != nil {
		return BillingAttempt{}, err
	}
	var c conv
	ba := BillingAttempt{
		ID:                     c.optID("id", r.ID),
		SubscriptionContractID: c.id("subscription_contract_id", r.SubscriptionContractID),
		OrderID:                c.optID("order_id", r.OrderID),
		Ready:                  r.Ready,
		ErrorMessage:           r.ErrorMessage,
		ErrorCode:              r.ErrorCode,
		IdempotencyKey:         strings.TrimSpace(r.IdempotencyKey),
	}
	if ba.ID == "" {
		ba.ID = c.str("id", ba.IdempotencyKey)
	}
	if len(ba.ID) > maxKey {
		c.fail("idempotency_key", "longer than 200 characters")
	}
	if c.err != nil {
		return BillingAttempt{}, c.err
	}
	return ba, nil
}
