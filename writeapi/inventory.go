package writeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/readapi"
)

// inventoryPatchBody is {data: {attributes: {items: [...]}}}; the items
// are decoded one by one so that each error names its item.
type inventoryPatchBody struct {
	Items []json.RawMessage `json:"items"`
}

type inventoryItemBody struct {
	InventoryItemID string `json:"inventory_item_id"`
	LocationID      string `json:"location_id"`
	Available       *int   `json:"available"`
}

// decodeItems decodes every item; the errors of the items that do not
// decode are returned together.
func decodeItems(raw []json.RawMessage) ([]domain.InventorySet, []domain.ItemError) {
	out := make([]domain.InventorySet, len(raw))
	var bad []domain.ItemError
	for i, r := range raw {
		var it inventoryItemBody
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		err := dec.Decode(&it)
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			bad = append(bad, domain.ItemError{Index: i, Field: typeErr.Field, Message: "wrong type"})
		case err != nil:
			bad = append(bad, domain.ItemError{Index: i, Field: "items", Message: "each item must be an object of inventory_item_id, location_id and available"})
		case it.Available == nil:
			bad = append(bad, domain.ItemError{Index: i, Field: "available", Message: "available is required"})
		default:
			out[i] = domain.InventorySet{InventoryItemID: it.InventoryItemID, LocationID: it.LocationID, Available: *it.Available}
		}
	}
	return out, bad
}

// bulkFailed is the 422 of a bulk request: details.field names the first
// bad item's field, details.items lists every bad item.
func bulkFailed(items []domain.ItemError, total int) *httpapi.Error {
	first := items[0]
	e := httpapi.ValidationFailed("items["+strconv.Itoa(first.Index)+"]."+first.Field,
		strconv.Itoa(len(items))+" of "+strconv.Itoa(total)+" items are invalid; nothing was applied")
	e.Details["items"] = items
	return e
}

// handleInventoryPatch sets the available quantity of up to 100 levels in
// one command: all or nothing. It answers with the adjustment, built from
// the command's result; GET /api/v1/inventory with X-Wait-For-Position
// shows the levels.
func (c *Catalog) handleInventoryPatch(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body inventoryPatchBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if len(body.Items) == 0 || len(body.Items) > domain.MaxInventoryItems {
		httpapi.WriteError(w, r, httpapi.ValidationFailed("items", "send 1 to "+strconv.Itoa(domain.MaxInventoryItems)+" items"))
		return
	}
	items, bad := decodeItems(body.Items)
	if len(bad) > 0 {
		httpapi.WriteError(w, r, bulkFailed(bad, len(items)))
		return
	}
	res, ev, err := c.cmds.AdjustInventory(r.Context(), commands.AdjustInventory{ShopID: p.ShopID, Items: items}, meta(r, p))
	var bulk *domain.BulkError
	if errors.As(err, &bulk) {
		err = bulkFailed(bulk.Items, len(items))
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteResource(w, r, http.StatusOK, AdjustmentResource(ev))
}

// AdjustmentAttributes are the attributes of a bulk inventory update.
type AdjustmentAttributes struct {
	Items      []AdjustedLevel `json:"items"`
	AdjustedAt time.Time       `json:"adjusted_at"`
}

// AdjustedLevel is one level a bulk update set.
type AdjustedLevel struct {
	ID              string `json:"id"`
	InventoryItemID string `json:"inventory_item_id"`
	LocationID      string `json:"location_id"`
	Available       int    `json:"available"`
}

// AdjustmentResource renders a bulk inventory update.
func AdjustmentResource(ev *domain.InventoryAdjusted) httpapi.Resource {
	a := AdjustmentAttributes{Items: make([]AdjustedLevel, len(ev.Items)), AdjustedAt: ev.AdjustedAt}
	for i, it := range ev.Items {
		a.Items[i] = AdjustedLevel{ID: it.LevelID, InventoryItemID: it.InventoryItemID, LocationID: it.LocationID, Available: it.Available}
	}
	return httpapi.Resource{ID: ev.AdjustmentID, Type: "inventory_adjustment", Attributes: a}
}
