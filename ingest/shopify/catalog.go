package shopify

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// Product is a products/create or products/update payload.
type Product struct {
	ID          string
	Title       string
	Handle      string
	Status      string // active, archived, draft
	Vendor      string
	ProductType string
	Tags        []string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Variants    []Variant
}

// Variant is one purchasable variant of a product.
type Variant struct {
	ID                string
	SKU               string
	Price             domain.Amount
	InventoryItemID   string
	InventoryQuantity int
}

type rawProduct struct {
	ID          json.Number `json:"id"`
	Title       string      `json:"title"`
	Handle      string      `json:"handle"`
	Status      string      `json:"status"`
	Vendor      string      `json:"vendor"`
	ProductType string      `json:"product_type"`
	Tags        string      `json:"tags"`
	CreatedAt   string      `json:"created_at"`
	UpdatedAt   string      `json:"updated_at"`
	Variants    []struct {
		ID                json.Number `json:"id"`
		SKU               string      `json:"sku"`
		Price             decimal     `json:"price"`
		InventoryItemID   json.Number `json:"inventory_item_id"`
		InventoryQuantity int         `json:"inventory_quantity"`
	} `json:"variants"`
}

// ParseProduct parses a products/create or products/update payload. It
// rejects a payload without a product id or with a variant without its id.
func ParseProduct(body []byte) (Product, error) {
	var r rawProduct
	if err := payload.Decode(body, &r); err != nil {
		return Product{}, err
	}
	var c conv
	p := Product{
		ID:          c.id("id", r.ID),
		Title:       r.Title,
		Handle:      r.Handle,
		Status:      r.Status,
		Vendor:      r.Vendor,
		ProductType: r.ProductType,
		Tags:        domain.SplitPlatformTags(r.Tags),
		CreatedAt:   c.time("created_at", r.CreatedAt),
		UpdatedAt:   c.time("updated_at", r.UpdatedAt),
	}
	for i, v := range r.Variants {
		f := fmt.Sprintf("variants[%d]", i)
		p.Variants = append(p.Variants, Variant{
			ID:                c.id(f+".id", v.ID),
			SKU:               v.SKU,
			Price:             c.amount(f+".price", v.Price),
			InventoryItemID:   c.optID(f+".inventory_item_id", v.InventoryItemID),
			InventoryQuantity: v.InventoryQuantity,
		})
	}
	if c.err != nil {
		return Product{}, c.err
	}
	return p, nil
}

// ProductDeletion is a products/delete payload: only the id remains.
type ProductDeletion struct {
	ID string
}

// ParseProductDeletion parses a products/delete payload. It rejects a
// payload without a product id.
func ParseProductDeletion(body []byte) (ProductDeletion, error) {
	var r struct {
		ID json.Number `json:"id"`
	}
	if err := payload.Decode(body, &r); err != nil {
		return ProductDeletion{}, err
	}
	var c conv
	d := ProductDeletion{ID: c.id("id", r.ID)}
	if c.err != nil {
		return ProductDeletion{}, c.err
	}
	return d, nil
}

// InventoryLevel is an inventory_levels/update payload: the stock of one
// inventory item at one location. The pair of ids is its identity.
type InventoryLevel struct {
	InventoryItemID string
	LocationID      string
	// Available is nil when the platform does not track the item's stock.
	Available *int
	UpdatedAt time.Time
}

// ParseInventoryLevel parses an inventory_levels/update payload. It rejects
// a payload without inventory_item_id or location_id.
func ParseInventoryLevel(body []byte) (InventoryLevel, error) {
	var r struct {
		InventoryItemID json.Number `json:"inventory_item_id"`
		LocationID      json.Number `json:"location_id"`
		Available       *int        `json:"available"`
		UpdatedAt       string      `json:"updated_at"`
	}
	if err := payload.Decode(body, &r); err != nil {
		return InventoryLevel{}, err
	}
	var c conv
	l := InventoryLevel{
		InventoryItemID: c.id("inventory_item_id", r.InventoryItemID),
		LocationID:      c.id("location_id", r.LocationID),
		Available:       r.Available,
		UpdatedAt:       c.time("updated_at", r.UpdatedAt),
	}
	if c.err != nil {
		return InventoryLevel{}, c.err
	}
	return l, nil
}
