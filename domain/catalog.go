package domain

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// catalogEvents lists the admin API's catalog writes: products the service
// owns and merchant changes to products and inventory.
func catalogEvents() []EventSpec {
	return []EventSpec{
		{Name: "ProductCreated", Version: 1, New: func() Event { return &ProductCreated{} }},
		{Name: "ProductUpdated", Version: 1, New: func() Event { return &ProductUpdated{} }},
		{Name: "InventoryAdjusted", Version: 1, New: func() Event { return &InventoryAdjusted{} }},
	}
}

// Id prefixes of catalog parts created by the admin API (a product created
// through the API takes PrefixProduct and NewID).
const (
	PrefixVariant       = "var_"
	PrefixInventoryItem = "itm_"
	PrefixAdjustment    = "iad_"
)

// Catalog limits.
const (
	MaxCatalogText        = 255 // title, handle, vendor, product type, sku, ids
	MaxVariants           = 100
	MaxInventoryItems     = 100
	MaxInventoryAvailable = 1_000_000_000
)

// ProductStatuses are the statuses a product may have.
func ProductStatuses() []string { return []string{"active", "draft", "archived"} }

// InventoryAdjustmentStream is the stream of one bulk inventory update: one
// event, so a bulk update is one append.
func InventoryAdjustmentStream(id string) string { return "inventory_adjustment-" + id }

// ProductCreated: a product created through the admin API (the service owns
// it; it has no external id on the platform).
type ProductCreated struct {
	ProductID   string    `json:"product_id"`
	ShopID      string    `json:"shop_id"`
	Title       string    `json:"title"`
	Handle      string    `json:"handle"`
	Status      string    `json:"status"`
	Vendor      string    `json:"vendor,omitempty"`
	ProductType string    `json:"product_type,omitempty"`
	Tags        []string  `json:"tags"`
	Variants    []Variant `json:"variants"`
	CreatedAt   time.Time `json:"created_at"`
}

// EventType implements Event.
func (ProductCreated) EventType() string { return "ProductCreated" }

// ProductUpdated: a merchant changed a product through the admin API. Only
// the fields set changed.
type ProductUpdated struct {
	ProductID   string    `json:"product_id"`
	ShopID      string    `json:"shop_id"`
	Title       *string   `json:"title,omitempty"`
	Status      *string   `json:"status,omitempty"`
	Vendor      *string   `json:"vendor,omitempty"`
	ProductType *string   `json:"product_type,omitempty"`
	Tags        *[]string `json:"tags,omitempty"`
	// Variants are the changes of variants' prices and SKUs, one per
	// variant changed (absent in events recorded before they could change).
	Variants  []VariantChange `json:"variants,omitempty"`
	UpdatedAt time.Time       `json:"updated_at"`
	// ExternalID is the platform's id of a product the platform owns
	// (recorded from its webhooks): the change is then pushed to the
	// platform. Empty for a product created through the API, and in
	// events recorded before changes were pushed.
	ExternalID string `json:"external_id,omitempty"`
}

// VariantChange is a change of one variant of a product: only the fields
// set changed. CompareAtPriceCleared removes the compare-at price.
type VariantChange struct {
	VariantID             string  `json:"variant_id"`
	Price                 *Amount `json:"price,omitempty"`
	CompareAtPrice        *Amount `json:"compare_at_price,omitempty"`
	CompareAtPriceCleared bool    `json:"compare_at_price_cleared,omitempty"`
	SKU                   *string `json:"sku,omitempty"`
}

// Apply applies the change to v (a variant with v.VariantID).
func (c VariantChange) Apply(v *Variant) {
	if c.Price != nil {
		v.Price = *c.Price
	}
	if c.CompareAtPrice != nil {
		at := *c.CompareAtPrice
		v.CompareAtPrice = &at
	}
	if c.CompareAtPriceCleared {
		v.CompareAtPrice = nil
	}
	if c.SKU != nil {
		v.SKU = *c.SKU
	}
}

// EventType implements Event.
func (ProductUpdated) EventType() string { return "ProductUpdated" }

// InventorySet is one item of a bulk inventory update: the available
// quantity of an inventory item at a location.
type InventorySet struct {
	LevelID         string `json:"level_id"`
	InventoryItemID string `json:"inventory_item_id"`
	LocationID      string `json:"location_id"`
	Available       int    `json:"available"`
}

// InventoryAdjusted: a merchant set the available quantities of up to
// MaxInventoryItems levels at once (PATCH /api/v1/inventory), all or
// nothing.
type InventoryAdjusted struct {
	AdjustmentID string         `json:"adjustment_id"`
	ShopID       string         `json:"shop_id"`
	Items        []InventorySet `json:"items"`
	AdjustedAt   time.Time      `json:"adjusted_at"`
}

// EventType implements Event.
func (InventoryAdjusted) EventType() string { return "InventoryAdjusted" }

// CatalogProduct is the product aggregate as the admin API sees it: which
// shop owns it, whether it exists and whether it was deleted, whichever
// side (platform or API) created it.
type CatalogProduct struct {
	ShopID  string
	Exists  bool
	Deleted bool
	// ExternalID is the platform's id of a product the platform sent.
	ExternalID string
	// Variants are the ids of the product's variants, as last created,
	// recorded from the platform or changed.
	Variants map[string]bool
}

// Apply folds an event into the product.
func (p *CatalogProduct) Apply(e Event) {
	switch ev := e.(type) {
	case *ProductCreated:
		p.ShopID, p.Exists = ev.ShopID, true
		p.setVariants(ev.Variants)
	case *ProductRecorded:
		if !ev.Stale {
			p.ShopID, p.Exists, p.ExternalID = ev.ShopID, true, ev.ExternalID
			p.setVariants(ev.Variants)
		}
	case *ProductDeleted:
		p.Deleted = true
	}
}

func (p *CatalogProduct) setVariants(vs []Variant) {
	p.Variants = make(map[string]bool, len(vs))
	for _, v := range vs {
		p.Variants[v.VariantID] = true
	}
}

// ProductDraft is what a merchant sends to create a product.
type ProductDraft struct {
	Title, Handle, Status, Vendor, ProductType string
	Tags                                       []string
	Variants                                   []VariantDraft
}

// VariantDraft is a variant of a product to create.
type VariantDraft struct {
	SKU   string
	Price Amount
}

// NewProduct decides the creation of a product with a fresh id; variants
// get fresh variant and inventory item ids. Status defaults to active,
// the handle to a slug of the title.
func NewProduct(shopID string, d ProductDraft, now time.Time) (*ProductCreated, error) {
	ev := &ProductCreated{ProductID: NewID(PrefixProduct), ShopID: shopID, CreatedAt: now.UTC(), Tags: []string{}, Variants: []Variant{}}
	var err error
	if ev.Title, err = catalogText("title", d.Title, true); err != nil {
		return nil, err
	}
	if ev.Handle, err = catalogText("handle", d.Handle, false); err != nil {
		return nil, err
	}
	if ev.Handle == "" {
		ev.Handle = Slug(ev.Title)
	}
	if ev.Status, err = productStatus(d.Status); err != nil {
		return nil, err
	}
	if ev.Vendor, err = catalogText("vendor", d.Vendor, false); err != nil {
		return nil, err
	}
	if ev.ProductType, err = catalogText("product_type", d.ProductType, false); err != nil {
		return nil, err
	}
	if d.Tags != nil {
		if ev.Tags, err = NormalizeTags(d.Tags); err != nil {
			return nil, err
		}
	}
	if len(d.Variants) > MaxVariants {
		return nil, Invalid("variants", "at most %d variants", MaxVariants)
	}
	for i, v := range d.Variants {
		sku, err := catalogText("variants["+itoa(i)+"].sku", v.SKU, false)
		if err != nil {
			return nil, err
		}
		if v.Price < 0 {
			return nil, Invalid("variants["+itoa(i)+"].price", "price must not be negative")
		}
		ev.Variants = append(ev.Variants, Variant{VariantID: NewID(PrefixVariant), SKU: sku, Price: v.Price,
			InventoryItemID: NewID(PrefixInventoryItem)})
	}
	return ev, nil
}

// ProductChanges is what a merchant may change on a product; nil fields
// stay as they are.
type ProductChanges struct {
	Title, Status, Vendor, ProductType *string
	Tags                               *[]string
	// Variants change prices and SKUs of existing variants (nil: none).
	Variants []VariantPatch
}

// VariantPatch is a merchant's change of one variant: nil fields stay as
// they are; ClearCompareAtPrice removes the compare-at price.
type VariantPatch struct {
	ID                  string
	Price               *Amount
	CompareAtPrice      *Amount
	ClearCompareAtPrice bool
	SKU                 *string
}

// Update decides a change of the product. A product of another shop is not
// found; a deleted one cannot change.
func (p *CatalogProduct) Update(shopID, productID string, c ProductChanges, now time.Time) (*ProductUpdated, error) {
	if !p.Exists || p.ShopID != shopID {
		return nil, NotFound("product")
	}
	if p.Deleted {
		return nil, Conflict("the product is deleted")
	}
	ev := &ProductUpdated{ProductID: productID, ShopID: shopID, UpdatedAt: now.UTC(), ExternalID: p.ExternalID}
	if c.Title == nil && c.Status == nil && c.Vendor == nil && c.ProductType == nil && c.Tags == nil && len(c.Variants) == 0 {
		return nil, Invalid("data.attributes", "nothing to change: send title, status, tags, vendor, product_type or variants")
	}
	changes, err := p.variantChanges(c.Variants)
	if err != nil {
		return nil, err
	}
	ev.Variants = changes
	set := func(field string, in *string, required bool, out **string) error {
		if in == nil {
			return nil
		}
		s, err := catalogText(field, *in, required)
		*out = &s
		return err
	}
	if err := set("title", c.Title, true, &ev.Title); err != nil {
		return nil, err
	}
	if err := set("vendor", c.Vendor, false, &ev.Vendor); err != nil {
		return nil, err
	}
	if err := set("product_type", c.ProductType, false, &ev.ProductType); err != nil {
		return nil, err
	}
	if c.Status != nil {
		if *c.Status == "" {
			return nil, Invalid("status", "status must be one of active, draft, archived")
		}
		s, err := productStatus(*c.Status)
		if err != nil {
			return nil, err
		}
		ev.Status = &s
	}
	if c.Tags != nil {
		tags, err := NormalizeTags(*c.Tags)
		if err != nil {
			return nil, err
		}
		ev.Tags = &tags
	}
	return ev, nil
}

// variantChanges checks a merchant's variant patches: each names a variant
// of the product once and changes something; prices are not negative.
func (p *CatalogProduct) variantChanges(patches []VariantPatch) ([]VariantChange, error) {
	if len(patches) > MaxVariants {
		return nil, Invalid("variants", "at most %d variants", MaxVariants)
	}
	seen := map[string]bool{}
	var out []VariantChange
	for i, v := range patches {
		field := "variants[" + itoa(i) + "]."
		if v.ID == "" {
			return nil, Invalid(field+"id", "the variant id is required")
		}
		if !p.Variants[v.ID] {
			return nil, Invalid(field+"id", "the product has no variant %s", clipText(v.ID))
		}
		if seen[v.ID] {
			return nil, Invalid(field+"id", "variant %s is changed twice", clipText(v.ID))
		}
		seen[v.ID] = true
		if v.Price == nil && v.CompareAtPrice == nil && !v.ClearCompareAtPrice && v.SKU == nil {
			return nil, Invalid(field+"id", "nothing to change: send price, compare_at_price or sku")
		}
		ch := VariantChange{VariantID: v.ID, Price: v.Price, CompareAtPrice: v.CompareAtPrice, CompareAtPriceCleared: v.ClearCompareAtPrice}
		if v.Price != nil && *v.Price < 0 {
			return nil, Invalid(field+"price", "price must not be negative")
		}
		if v.CompareAtPrice != nil && *v.CompareAtPrice < 0 {
			return nil, Invalid(field+"compare_at_price", "compare_at_price must not be negative")
		}
		if v.SKU != nil {
			sku, err := catalogText(field+"sku", *v.SKU, false)
			if err != nil {
				return nil, err
			}
			ch.SKU = &sku
		}
		out = append(out, ch)
	}
	return out, nil
}

// clipText shortens an echoed value for a message.
func clipText(s string) string {
	if utf8.RuneCountInString(s) <= 40 {
		return s
	}
	return string([]rune(s)[:40]) + "…"
}

// ItemError is a rule one item of a bulk request breaks.
type ItemError struct {
	Index   int    `json:"index"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

// BulkError is a bulk request rejected as a whole for the errors of its
// items (details.items).
type BulkError struct {
	Err   *Error
	Items []ItemError
}

// Error implements error.
func (e *BulkError) Error() string { return e.Err.Error() }

// Unwrap returns the validation error, so the HTTP edge maps a BulkError
// like any validation failure.
func (e *BulkError) Unwrap() error { return e.Err }

// AdjustInventory decides a bulk inventory update: every item is checked
// (ids present and at most MaxCatalogText long, available within ±1e9, no
// level twice) and any failure rejects the whole request with the errors of
// every bad item.
func AdjustInventory(shopID string, items []InventorySet, now time.Time) (*InventoryAdjusted, error) {
	if len(items) == 0 || len(items) > MaxInventoryItems {
		return nil, Invalid("items", "send 1 to %d items", MaxInventoryItems)
	}
	var bad []ItemError
	seen := make(map[string]int, len(items))
	out := make([]InventorySet, len(items))
	for i, it := range items {
		fail := func(field, msg string) { bad = append(bad, ItemError{Index: i, Field: field, Message: msg}) }
		switch {
		case !validID(it.InventoryItemID):
			fail("inventory_item_id", "inventory_item_id is required (1 to 255 characters)")
		case !validID(it.LocationID):
			fail("location_id", "location_id is required (1 to 255 characters)")
		case it.Available > MaxInventoryAvailable || it.Available < -MaxInventoryAvailable:
			fail("available", "available must be between -1000000000 and 1000000000")
		default:
			it.LevelID = InventoryLevelID(shopID, it.InventoryItemID, it.LocationID)
			if first, dup := seen[it.LevelID]; dup {
				fail("location_id", "the same inventory item and location appear at index "+itoa(first))
			}
			seen[it.LevelID] = i
		}
		out[i] = it
	}
	if len(bad) > 0 {
		return nil, &BulkError{Err: Invalid("items["+itoa(bad[0].Index)+"]."+bad[0].Field, "%d of %d items are invalid; nothing was applied", len(bad), len(items)), Items: bad}
	}
	return &InventoryAdjusted{AdjustmentID: NewID(PrefixAdjustment), ShopID: shopID, Items: out, AdjustedAt: now.UTC()}, nil
}

func validID(s string) bool {
	return s != "" && len(s) <= MaxCatalogText && utf8.ValidString(s) && strings.TrimSpace(s) == s
}

func productStatus(s string) (string, error) {
	if s == "" {
		return "active", nil
	}
	for _, ok := range ProductStatuses() {
		if s == ok {
			return s, nil
		}
	}
	return "", Invalid("status", "status must be one of active, draft, archived")
}

// catalogText trims s and checks it is valid text of at most
// MaxCatalogText characters (and not empty when required).
func catalogText(field, s string, required bool) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxCatalogText:
		return "", Invalid(field, "%s must be at most %d characters", field, MaxCatalogText)
	case required && s == "":
		return "", Invalid(field, "%s is required", field)
	}
	return s, nil
}

// Slug makes a URL handle of a title: lower-case letters and digits, runs
// of anything else as one hyphen.
func Slug(title string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(title) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			hyphen = false
			continue
		}
		hyphen = true
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }
