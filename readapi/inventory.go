package readapi

import (
	"net/http"
	"time"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/commerce"
)

// InventoryListSpec is the allow-list of the inventory list's parameters.
var InventoryListSpec = httpapi.ListSpec{
	Resource: "inventory",
	Filters: map[string]httpapi.FilterKind{
		"product_id":  httpapi.StringFilter(),
		"sku":         httpapi.StringFilter(),
		"location_id": httpapi.StringFilter(),
	},
	Sorts:       []string{commerce.InventorySortItemID, commerce.InventorySortUpdatedAt},
	DefaultSort: commerce.InventorySortItemID,
}

func (c *Catalog) handleInventoryList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, c.cursors, c.wait, commerce.Name, InventoryListSpec, func(params httpapi.ListParams, after *commerce.CatalogKey) ([]httpapi.Resource, *commerce.CatalogKey, error) {
		rows, next, err := c.q.InventoryLevels(r.Context(), commerce.InventoryListQuery{
			Shop: p.ShopID, ProductID: params.Filters["product_id"], SKU: params.Filters["sku"], LocationID: params.Filters["location_id"],
			Sort: params.Sort.Field, Desc: params.Sort.Desc, After: after, Limit: params.Limit,
		})
		items := make([]httpapi.Resource, len(rows))
		for i := range rows {
			items[i] = InventoryLevelResource(&rows[i])
		}
		return items, next, err
	})
}

// InventoryLevelAttributes are an inventory level's attributes in the
// admin API.
type InventoryLevelAttributes struct {
	InventoryItemID string `json:"inventory_item_id"`
	LocationID      string `json:"location_id"`
	// Available is nil when the platform does not track the item.
	Available *int `json:"available"`
	// SKU and ProductID are those of the variant holding the item; nil
	// when no live product holds it.
	SKU       *string   `json:"sku"`
	ProductID *string   `json:"product_id"`
	UpdatedAt time.Time `json:"updated_at"`
}

// InventoryLevelResource renders an inventory level in the single-resource
// shape.
func InventoryLevelResource(l *commerce.StockLevel) httpapi.Resource {
	res := httpapi.Resource{
		ID: l.LevelID, Type: "inventory_level",
		Attributes: InventoryLevelAttributes{InventoryItemID: l.InventoryItemID, LocationID: l.LocationID, Available: l.Available,
			SKU: optional(l.SKU), ProductID: optional(l.ProductID), UpdatedAt: l.UpdatedAt},
	}
	if l.ProductID != "" {
		res.Relationships = map[string]httpapi.Relationship{"product": httpapi.RelatedLink("/api/v1/products/" + l.ProductID)}
	}
	return res
}
