package readapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/commerce"
)

// Catalog serves the product and inventory reads from the commerce read
// model.
type Catalog struct {
	q       *commerce.Queries
	auth    *auth.Authenticator
	cursors *httpapi.CursorCodec
	wait    Waiter
}

// NewCatalog returns the product and inventory read handlers.
func NewCatalog(q *commerce.Queries, a *auth.Authenticator, cursors *httpapi.CursorCodec, wait Waiter) *Catalog {
	return &Catalog{q: q, auth: a, cursors: cursors, wait: wait}
}

// ProductListSpec is the allow-list of the product list's parameters.
// Deleted products are not listed.
var ProductListSpec = httpapi.ListSpec{
	Resource: "products",
	Filters: map[string]httpapi.FilterKind{
		"status": httpapi.EnumFilter(domain.ProductStatuses()...),
		"vendor": httpapi.StringFilter(),
	},
	Sorts:       []string{commerce.ProductSortCreatedAt, commerce.ProductSortUpdatedAt, commerce.ProductSortTitle},
	DefaultSort: "-" + commerce.ProductSortCreatedAt,
}

// Routes registers the product and inventory reads.
func (c *Catalog) Routes(r *mux.Router) {
	r.Handle("/api/v1/products", httpapi.Stable(httpapi.Compressed(c.auth.Require(domain.ScopeProductsRead, http.HandlerFunc(c.handleProductList))))).Methods(http.MethodGet)
	r.Handle("/api/v1/products/{id}", httpapi.Stable(c.auth.Require(domain.ScopeProductsRead, http.HandlerFunc(c.handleProductGet)))).Methods(http.MethodGet)
	r.Handle("/api/v1/inventory", httpapi.Stable(httpapi.Compressed(c.auth.Require(domain.ScopeProductsRead, http.HandlerFunc(c.handleInventoryList))))).Methods(http.MethodGet)
}

func (c *Catalog) handleProductList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, c.cursors, c.wait, commerce.Name, ProductListSpec, func(params httpapi.ListParams, after *commerce.CatalogKey) ([]httpapi.Resource, *commerce.CatalogKey, error) {
		rows, next, err := c.q.Products(r.Context(), commerce.ProductListQuery{
			Shop: p.ShopID, Status: params.Filters["status"], Vendor: params.Filters["vendor"],
			Sort: params.Sort.Field, Desc: params.Sort.Desc, After: after, Limit: params.Limit,
		})
		items := make([]httpapi.Resource, len(rows))
		for i := range rows {
			items[i] = ProductResource(&rows[i])
		}
		return items, next, err
	}, c.inventoryRelation(p.ShopID))
}

// MaxIncludedInventory bounds the inventory levels one response embeds
// with include=inventory; a page that would embed more is a 400 (ask for
// fewer products, or list /api/v1/inventory?filter[product_id]=…).
const MaxIncludedInventory = 1000

// inventoryRelation embeds a product's inventory levels
// (include=inventory); a product's variants are already in its attributes.
func (c *Catalog) inventoryRelation(shop string) Relation {
	return Relation{
		Name: "inventory", ToMany: true,
		Key: func(res httpapi.Resource) string { return res.ID },
		Load: func(ctx context.Context, ids []string) (map[string][]httpapi.Resource, error) {
			rows, next, err := c.q.InventoryLevels(ctx, commerce.InventoryListQuery{Shop: shop, ProductIDs: ids,
				Sort: commerce.InventorySortItemID, Limit: MaxIncludedInventory})
			if err != nil {
				return nil, err
			}
			if next != nil {
				return nil, httpapi.InvalidParameter("include", fmt.Sprintf(
					"include=inventory would embed more than %d inventory levels; ask for fewer products", MaxIncludedInventory))
			}
			out := make(map[string][]httpapi.Resource, len(ids))
			for i := range rows {
				out[rows[i].ProductID] = append(out[rows[i].ProductID], InventoryLevelResource(&rows[i]))
			}
			return out, nil
		},
	}
}

func (c *Catalog) handleProductGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	ServeOne(w, r, c.wait, commerce.Name, p.ShopID,
		func(ctx context.Context, shop string) (*commerce.Product, error) { return c.q.Product(ctx, shop, id) }, ProductResource,
		c.inventoryRelation(p.ShopID))
}

// ProductAttributes are a product's attributes in the admin API.
type ProductAttributes struct {
	Title       string           `json:"title"`
	Handle      string           `json:"handle"`
	Status      string           `json:"status"`
	Vendor      string           `json:"vendor"`
	ProductType string           `json:"product_type"`
	Tags        []string         `json:"tags"`
	Variants    []VariantSummary `json:"variants"`
	// ExternalID is the platform's id; nil for a product created through
	// the admin API.
	ExternalID *string   `json:"external_id"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	Deleted    bool      `json:"deleted"`
}

// VariantSummary is a variant in a product's attributes.
type VariantSummary struct {
	ID                string   `json:"id"`
	SKU               *string  `json:"sku"`
	Price             float64  `json:"price"`
	CompareAtPrice    *float64 `json:"compare_at_price"`
	InventoryItemID   *string  `json:"inventory_item_id"`
	InventoryQuantity int      `json:"inventory_quantity"`
}

// ProductResource renders a product in the single-resource shape.
func ProductResource(p *commerce.Product) httpapi.Resource {
	a := ProductAttributes{
		Title: p.Title, Handle: p.Handle, Status: p.Status, Vendor: p.Vendor, ProductType: p.ProductType,
		Tags: nonNil(p.Tags), Variants: make([]VariantSummary, len(p.Variants)), ExternalID: optional(p.ExternalID),
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Deleted: !p.DeletedAt.IsZero(),
	}
	for i, v := range p.Variants {
		a.Variants[i] = VariantSummary{ID: v.VariantID, SKU: optional(v.SKU), Price: v.Price.Float(),
			InventoryItemID: optional(v.InventoryItemID), InventoryQuantity: v.InventoryQuantity}
		if v.CompareAtPrice != nil {
			at := v.CompareAtPrice.Float()
			a.Variants[i].CompareAtPrice = &at
		}
	}
	return httpapi.Resource{
		ID: p.ID, Type: "product", Attributes: a,
		Relationships: map[string]httpapi.Relationship{
			"inventory": httpapi.RelatedLink("/api/v1/inventory?" + url.Values{"filter[product_id]": {p.ID}}.Encode()),
		},
	}
}

// optional is nil for "", else a pointer to s.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
