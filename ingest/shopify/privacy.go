package shopify

import (
	"encoding/json"

	"github.com/cgp-platform/cgp/ingest/payload"
)

// PrivacyCustomer is the customer a privacy request is about. Email and
// Phone are personal data.
type PrivacyCustomer struct {
	ID    string
	Email string
	Phone string
}

// DataRequest is a customers/data_request payload.
type DataRequest struct {
	ShopID          string
	ShopDomain      string
	OrdersRequested []string
	Customer        PrivacyCustomer
	DataRequestID   string
}

// CustomerRedact is a customers/redact payload.
type CustomerRedact struct {
	ShopID         string
	ShopDomain     string
	Customer       PrivacyCustomer
	OrdersToRedact []string
}

// ShopRedact is a shop/redact payload.
type ShopRedact struct {
	ShopID     string
	ShopDomain string
}

type rawPrivacyCustomer struct {
	ID    json.Number `json:"id"`
	Email string      `json:"email"`
	Phone string      `json:"phone"`
}

func (c *conv) privacyCustomer(r *rawPrivacyCustomer) PrivacyCustomer {
	if r == nil {
		c.fail("customer.id", "id is required")
		return PrivacyCustomer{}
	}
	return PrivacyCustomer{ID: c.id("customer.id", r.ID), Email: r.Email, Phone: r.Phone}
}

// ParseDataRequest parses a customers/data_request payload. It rejects a
// payload without shop_id or customer.id.
func ParseDataRequest(body []byte) (DataRequest, error) {
	var r struct {
		ShopID          json.Number         `json:"shop_id"`
		ShopDomain      string              `json:"shop_domain"`
		OrdersRequested []json.Number       `json:"orders_requested"`
		Customer        *rawPrivacyCustomer `json:"customer"`
		DataRequest     *struct {
			ID json.Number `json:"id"`
		} `json:"data_request"`
	}
	if err := payload.Decode(body, &r); err != nil {
		return DataRequest{}, err
	}
	var c conv
	d := DataRequest{
		ShopID:          c.id("shop_id", r.ShopID),
		ShopDomain:      r.ShopDomain,
		OrdersRequested: c.ids("orders_requested", r.OrdersRequested),
		Customer:        c.privacyCustomer(r.Customer),
	}
	if r.DataRequest != nil {
		d.DataRequestID = c.optID("data_request.id", r.DataRequest.ID)
	}
	if c.err != nil {
		return DataRequest{}, c.err
	}
	return d, nil
}

// ParseCustomerRedact parses a customers/redact payload. It rejects a
// payload without shop_id or customer.id.
func ParseCustomerRedact(body []byte) (CustomerRedact, error) {
	var r struct {
		ShopID         json.Number         `json:"shop_id"`
		ShopDomain     string              `json:"shop_domain"`
		Customer       *rawPrivacyCustomer `json:"customer"`
		OrdersToRedact []json.Number       `json:"orders_to_redact"`
	}
	if err := payload.Decode(body, &r); err != nil {
		return CustomerRedact{}, err
	}
	var c conv
	d := CustomerRedact{
		ShopID:         c.id("shop_id", r.ShopID),
		ShopDomain:     r.ShopDomain,
		Customer:       c.privacyCustomer(r.Customer),
		OrdersToRedact: c.ids("orders_to_redact", r.OrdersToRedact),
	}
	if c.err != nil {
		return CustomerRedact{}, c.err
	}
	return d, nil
}

// ParseShopRedact parses a shop/redact payload. It rejects a payload
// without shop_id.
func ParseShopRedact(body []byte) (ShopRedact, error) {
	var r struct {
		ShopID     json.Number `json:"shop_id"`
		ShopDomain string      `json:"shop_domain"`
	}
	if err := payload.Decode(body, &r); err != nil {
		return ShopRedact{}, err
	}
	var c conv
	d := ShopRedact{ShopID: c.id("shop_id", r.ShopID), ShopDomain: r.ShopDomain}
	if c.err != nil {
		return ShopRedact{}, c.err
	}
	return d, nil
}
