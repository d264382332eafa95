package shopify

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// Cart is a carts/create or carts/update payload.
type Cart struct {
	ID        string // the cart token: the platform sends it as id and token
	LineItems []CartLineItem
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CartLineItem is one line of a cart. Cart lines have no numeric id of
// their own; Key identifies the line within the cart.
type CartLineItem struct {
	Key       string
	ProductID string
	VariantID string
	SKU       string
	Title     string
	Quantity  int
	Price     domain.Amount // unit price
	LinePrice domain.Amount // price × quantity, after line discounts
}

type rawCart struct {
	ID        payload.Text `json:"id"` // the token; a number in some payloads
	Token     string       `json:"token"`
	CreatedAt string       `json:"created_at"`
	UpdatedAt string       `json:"updated_at"`
	LineItems []struct {
		Key       string      `json:"key"`
		ProductID json.Number `json:"product_id"`
		VariantID json.Number `json:"variant_id"`
		SKU       string      `json:"sku"`
		Title     string      `json:"title"`
		Quantity  int         `json:"quantity"`
		Price     decimal     `json:"price"`
		LinePrice decimal     `json:"line_price"`
	} `json:"line_items"`
}

// ParseCart parses a carts/create or carts/update payload. It rejects a
// payload with neither id nor token.
func ParseCart(body []byte) (Cart, error) {
	var r rawCart
	if err := payload.Decode(body, &r); err != nil {
		return Cart{}, err
	}
	var c conv
	id := strings.TrimSpace(string(r.ID))
	if id == "" {
		id = strings.TrimSpace(r.Token)
	}
	ct := Cart{
		ID:        c.str("id", id),
		CreatedAt: c.time("created_at", r.CreatedAt),
		UpdatedAt: c.time("updated_at", r.UpdatedAt),
	}
	for i, li := range r.LineItems {
		f := fmt.Sprintf("line_items[%d]", i)
		ct.LineItems = append(ct.LineItems, CartLineItem{
			Key:       li.Key,
			ProductID: c.optID(f+".product_id", li.ProductID),
			VariantID: c.optID(f+".variant_id", li.VariantID),
			SKU:       li.SKU,
			Title:     li.Title,
			Quantity:  li.Quantity,
			Price:     c.amount(f+".price", li.Price),
			LinePrice: c.amount(f+".line_price", li.LinePrice),
		})
	}
	if c.err != nil {
		return Cart{}, c.err
	}
	return ct, nil
}

// Checkout is a checkouts/create or checkouts/update payload.
type Checkout struct {
	ID                   string
	Token                string
	CartToken            string
	Email                string // personal data
	CustomerID           string
	LandingSite          string
	ReferringSite        string
	TotalPrice           domain.Amount
	Currency             string
	CreatedAt            time.Time
	UpdatedAt            time.Time
	CompletedAt          time.Time // zero while the checkout is open
	AbandonedCheckoutURL string    // the recovery link; it carries a secret key
	LineItems            []LineItem
	// UTM and ClickIDs are read from LandingSite's query.
	UTM      UTM
	ClickIDs ClickIDs
}

type rawCheckout struct {
	ID            json.Number `json:"id"`
	Token         string      `json:"token"`
	CartToken     string      `json:"cart_token"`
	Email         string      `json:"email"`
	LandingSite   string      `json:"landing_site"`
	ReferringSite string      `json:"referring_site"`
	TotalPrice    decimal     `json:"total_price"`
	Currency      string      `json:"currency"`
	CreatedAt     string      `json:"created_at"`
	UpdatedAt     string      `json:"updated_at"`
	CompletedAt   string      `json:"completed_at"`
	AbandonedURL  string      `json:"abandoned_checkout_url"`
	Customer      *struct {
		ID json.Number `json:"id"`
	} `json:"customer"`
	LineItems []rawLineItem `json:"line_items"`
}

// ParseCheckout parses a checkouts/create or checkouts/update payload. It
// rejects a payload without a checkout id.
func ParseCheckout(body []byte) (Checkout, error) {
	var r rawCheckout
	if err := payload.Decode(body, &r); err != nil {
		return Checkout{}, err
	}
	var c conv
	co := Checkout{
		ID:                   c.id("id", r.ID),
		Token:                strings.TrimSpace(r.Token),
		CartToken:            strings.TrimSpace(r.CartToken),
		Email:                strings.TrimSpace(r.Email),
		LandingSite:          r.LandingSite,
		ReferringSite:        r.ReferringSite,
		TotalPrice:           c.amount("total_price", r.TotalPrice),
		Currency:             r.Currency,
		CreatedAt:            c.time("created_at", r.CreatedAt),
		UpdatedAt:            c.time("updated_at", r.UpdatedAt),
		CompletedAt:          c.time("completed_at", r.CompletedAt),
		AbandonedCheckoutURL: r.AbandonedURL,
	}
	if r.Customer != nil {
		co.CustomerID = c.optID("customer.id", r.Customer.ID)
	}
	co.LineItems = c.lineItems("line_items", r.LineItems, false)
	co.UTM, co.ClickIDs = ParseLandingSite(co.LandingSite)
	if c.err != nil {
		return Checkout{}, c.err
	}
	return co, nil
}

// UTM holds the utm_* campaign parameters of a landing URL.
type UTM struct {
	Source   string
	Medium   string
	Campaign string
	Term     string
	Content  string
}

// ClickIDs holds the advertising platforms' click ids of a landing URL.
type ClickIDs struct {
	GCLID   string // Google Ads
	GBRAID  string // Google Ads, iOS app-to-web
	WBRAID  string // Google Ads, iOS web-to-app
	FBCLID  string // Meta
	TTCLID  string // TikTok
	MSCLKID string // Microsoft Advertising
}

// ParseLandingSite reads the UTM parameters and click ids from a landing
// site, which the platform sends as a path with query ("/?utm_source=x") or
// as a full URL. It never fails: a malformed query yields what could be
// read, and an absent parameter yields "". Parameter names are matched
// exactly (as analytics tools do); the first occurrence wins.
func ParseLandingSite(landing string) (UTM, ClickIDs) {
	_, query, ok := strings.Cut(landing, "?")
	if !ok {
		return UTM{}, ClickIDs{}
	}
	query, _, _ = strings.Cut(query, "#")
	// ParseQuery keeps the pairs it could decode and reports the rest; the
	// partial result is what attribution wants.
	values, _ := url.ParseQuery(query)
	get := func(name string) string {
		return strings.TrimSpace(values.Get(name))
	}
	return UTM{
			Source:   get("utm_source"),
			Medium:   get("utm_medium"),
			Campaign: get("utm_campaign"),
			Term:     get("utm_term"),
			Content:  get("utm_content"),
		}, ClickIDs{
			GCLID:   get("gclid"),
			GBRAID:  get("gbraid"),
			WBRAID:  get("wbraid"),
			FBCLID:  get("fbclid"),
			TTCLID:  get("ttclid"),
			MSCLKID: get("msclkid"),
		}
}
