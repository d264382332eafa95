package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
)

// Shape of the generated orders/create deliveries.
const (
	topic       = "orders/create"
	payloadSize = 2048 // bytes of every body
	firstOrder  = 5_984_400_000_000
	firstNumber = 1001
)

// The catalogue the orders draw their lines from.
var catalogue = []struct {
	title, variant, sku, vendor string
	cents, grams                int
}{
	{"Linen Shirt", "M / Sand", "LIN-SHIRT-M-SAND", "Atelier Nord", 5990, 350},
	{"Linen Shirt", "L / Navy", "LIN-SHIRT-L-NAVY", "Atelier Nord", 5990, 360},
	{"Merino Crew", "S / Oat", "MER-CREW-S-OAT", "Atelier Nord", 8900, 280},
	{"Canvas Tote", "One size", "CAN-TOTE-OS", "Harbor Goods", 2450, 410},
	{"Wool Beanie", "Charcoal", "WOOL-BEANIE-CHA", "Harbor Goods", 2900, 120},
	{"Selvedge Jeans", "32 / 32", "SEL-JEAN-3232", "Denim Atelier", 14900, 820},
	{"Leather Belt", "90 cm", "LEA-BELT-90", "Denim Atelier", 6500, 240},
	{"Cotton Socks", "3-pack", "COT-SOCK-3P", "Harbor Goods", 1500, 150},
}

// Where the visits that ended in an order came from.
var campaigns = []struct{ source, medium, campaign, referrer string }{
	{"newsletter", "email", "spring_launch", "https://mail.example.net/"},
	{"instagram", "social", "linen_reels", "https://l.instagram.example/"},
	{"google", "cpc", "brand_search", "https://www.google.example/"},
	{"tiktok", "paid_social", "ugc_wave_3", "https://www.tiktok.example/"},
	{"partner", "affiliate", "blogger_q2", "https://styleblog.example.org/"},
}

type lineItem struct {
	ID                int64  `json:"id"`
	AdminGraphqlAPIID string `json:"admin_graphql_api_id"`
	Grams             int    `json:"grams"`
	Name              string `json:"name"`
	Price             string `json:"price"`
	ProductID         int64  `json:"product_id"`
	Quantity          int    `json:"quantity"`
	SKU               string `json:"sku"`
	Taxable           bool   `json:"taxable"`
	Title             string `json:"title"`
	VariantID         int64  `json:"variant_id"`
	VariantTitle      string `json:"variant_title"`
	Vendor            string `json:"vendor"`
}

type attribute struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type discountCode struct {
	Code   string `json:"code"`
	Amount string `json:"amount"`
	Type   string `json:"type"`
}

type customer struct {
	ID                int64  `json:"id"`
	Email             string `json:"email"`
	FirstName         string `json:"first_name"`
	LastName          string `json:"last_name"`
	State             string `json:"state"`
	Currency          string `json:"currency"`
	AdminGraphqlAPIID string `json:"admin_graphql_api_id"`
}

// order is an orders/create payload in the platform's shape (the fields
// ingest/shopify reads, and the usual others around them).
type order struct {
	ID                  int64          `json:"id"`
	AdminGraphqlAPIID   string         `json:"admin_graphql_api_id"`
	BrowserIP           string         `json:"browser_ip"`
	BuyerAcceptsMkt     bool           `json:"buyer_accepts_marketing"`
	CartToken           string         `json:"cart_token"`
	CheckoutToken       string         `json:"checkout_token"`
	Confirmed           bool           `json:"confirmed"`
	ContactEmail        string         `json:"contact_email"`
	CreatedAt           string         `json:"created_at"`
	Currency            string         `json:"currency"`
	CustomerLocale      string         `json:"customer_locale"`
	DiscountCodes       []discountCode `json:"discount_codes"`
	Email               string         `json:"email"`
	FinancialStatus     string         `json:"financial_status"`
	FulfillmentStatus   *string        `json:"fulfillment_status"`
	LandingSite         string         `json:"landing_site"`
	Name                string         `json:"name"`
	Note                string         `json:"note"`
	NoteAttributes      []attribute    `json:"note_attributes"`
	Number              int            `json:"number"`
	OrderNumber         int            `json:"order_number"`
	ProcessedAt         string         `json:"processed_at"`
	ReferringSite       string         `json:"referring_site"`
	SourceName          string         `json:"source_name"`
	SubtotalPrice       string         `json:"subtotal_price"`
	Tags                string         `json:"tags"`
	TaxesIncluded       bool           `json:"taxes_included"`
	Test                bool           `json:"test"`
	TotalDiscounts      string         `json:"total_discounts"`
	TotalLineItemsPrice string         `json:"total_line_items_price"`
	TotalPrice          string         `json:"total_price"`
	TotalTax            string         `json:"total_tax"`
	UpdatedAt           string         `json:"updated_at"`
	Customer            customer       `json:"customer"`
	LineItems           []lineItem     `json:"line_items"`
}

// generator makes the deliveries of a benchmark: order i has its own order
// id and webhook id; its customer is drawn from a pool, so that customers
// place several orders. The same seed gives the same deliveries.
type generator struct {
	secret    string
	customers int
	seed      uint64
	epoch     time.Time
}

// delivery returns the signed delivery of order i.
func (g generator) delivery(i int) benchkit.Delivery {
	body, at := g.body(i)
	d := benchkit.NewDelivery(g.secret, webhookID(g.seed, i), topic, body)
	d.TriggeredAt = at
	return d
}

// deliveries returns the deliveries of orders from to from+n-1, made on
// two goroutines.
func (g generator) deliveries(from, n int) []benchkit.Delivery {
	out := make([]benchkit.Delivery, n)
	done := make(chan struct{})
	half := n / 2
	go func() {
		for i := range half {
			out[i] = g.delivery(from + i)
		}
		close(done)
	}()
	for i := half; i < n; i++ {
		out[i] = g.delivery(from + i)
	}
	<-done
	return out
}

// webhookID is the platform's delivery id of order i: a UUID-shaped id.
func webhookID(seed uint64, i int) string {
	return fmt.Sprintf("be7c4000-%04x-4000-8000-%012x", seed&0xffff, i)
}

// body returns the payload of order i, exactly payloadSize bytes (the note
// pads it), and its creation time.
func (g generator) body(i int) ([]byte, string) {
	o := g.order(i)
	b := marshal(o)
	if pad := payloadSize - len(b); pad > 0 {
		o.Note = noteText(pad)
		b = marshal(o)
	}
	return b, o.CreatedAt
}

// marshal encodes o as the platform does: no HTML escaping, no newline.
func marshal(o order) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(o); err != nil {
		panic(err) // plain strings and numbers only
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// noteText is n bytes of plain text that JSON does not escape.
func noteText(n int) string {
	const words = "Please leave the parcel with the neighbours at number twelve if nobody answers the door. "
	return strings.Repeat(words, n/len(words)+1)[:n]
}

func (g generator) order(i int) order {
	r := rand.New(rand.NewPCG(g.seed, uint64(i)))
	c := r.IntN(g.customers)
	email := fmt.Sprintf("bench.customer.%d@example.com", c)
	created := g.epoch.Add(time.Duration(i) * 731 * time.Millisecond)
	stamp := func(d time.Duration) string { return created.Add(d).Format(time.RFC3339) }
	camp := campaigns[r.IntN(len(campaigns))]
	o := order{
		ID:                firstOrder + int64(i),
		BrowserIP:         fmt.Sprintf("203.0.113.%d", 1+r.IntN(254)),
		BuyerAcceptsMkt:   r.IntN(3) > 0,
		CartToken:         fmt.Sprintf("c1-%016x", r.Uint64()),
		CheckoutToken:     fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()),
		Confirmed:         true,
		ContactEmail:      email,
		CreatedAt:         stamp(0),
		Currency:          "EUR",
		CustomerLocale:    "nl",
		Email:             email,
		FinancialStatus:   []string{"paid", "paid", "pending", "authorized"}[r.IntN(4)],
		LandingSite:       fmt.Sprintf("/products/%s?utm_source=%s&utm_medium=%s&utm_campaign=%s&utm_content=hero", slug(catalogue[r.IntN(len(catalogue))].title), camp.source, camp.medium, camp.campaign),
		Name:              fmt.Sprintf("#%d", firstNumber+i),
		NoteAttributes:    []attribute{{"delivery_slot", fmt.Sprint(1 + r.IntN(4))}, {"gift_message", ""}},
		Number:            1 + i,
		OrderNumber:       firstNumber + i,
		ProcessedAt:       stamp(-time.Second),
		ReferringSite:     camp.referrer,
		SourceName:        "web",
		Tags:              "bench, " + camp.medium,
		TaxesIncluded:     true,
		UpdatedAt:         stamp(2 * time.Second),
		AdminGraphqlAPIID: fmt.Sprintf("gid://shopify/Order/%d", firstOrder+int64(i)),
		Customer: customer{
			ID: 7_064_055_000_000 + int64(c), Email: email, FirstName: "Bench", LastName: fmt.Sprintf("Customer %d", c),
			State: "enabled", Currency: "EUR", AdminGraphqlAPIID: fmt.Sprintf("gid://shopify/Customer/%d", 7_064_055_000_000+int64(c)),
		},
	}
	lines := 1 + r.IntN(2)
	total := 0
	for l := range lines {
		p := catalogue[r.IntN(len(catalogue))]
		q := 1 + r.IntN(2)
		li := lineItem{
			ID: 14_522_000_000_000 + int64(i)*4 + int64(l), Grams: p.grams, Name: p.title + " - " + p.variant,
			Price: cents(p.cents), ProductID: 8_123_456_000_000 + int64(p.cents), Quantity: q, SKU: p.sku, Taxable: true,
			Title: p.title, VariantID: 44_123_456_000_000 + int64(len(p.sku)*1000+p.grams), VariantTitle: p.variant, Vendor: p.vendor,
		}
		li.AdminGraphqlAPIID = fmt.Sprintf("gid://shopify/LineItem/%d", li.ID)
		o.LineItems = append(o.LineItems, li)
		total += p.cents * q
	}
	discount := 0
	o.DiscountCodes = []discountCode{}
	if r.IntN(4) == 0 {
		discount = 1000
		o.DiscountCodes = []discountCode{{"SPRING10", "10.00", "fixed_amount"}}
	}
	o.TotalLineItemsPrice = cents(total)
	o.TotalDiscounts = cents(discount)
	o.SubtotalPrice = cents(total - discount)
	o.TotalPrice = cents(total - discount)
	o.TotalTax = cents((total - discount) * 21 / 121) // 21 % VAT included
	return o
}

func cents(c int) string { return fmt.Sprintf("%d.%02d", c/100, c%100) }

func slug(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "-")) }
