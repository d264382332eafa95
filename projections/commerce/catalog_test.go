package commerce_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/commerce"
)

var catalogMeta = commands.Meta{Actor: "test", Source: "cli"}

// TestCatalogFoldsAndLists: products created, changed and adjusted through
// the admin API's commands show in the read model; lists page with keys
// without skipping or repeating; a rebuild from position 0 equals the live
// read model row for row.
func TestCatalogFoldsAndLists(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { clock = clock.Add(time.Second); return clock })
	live := core.ReadSide(t, commerce.Projector(core.Codec))
	var ids []string
	for _, title := range []string{"Delta", "Alpha", "Charlie", "Bravo", "Echo"} {
		_, ev, err := core.Commands.CreateProduct(ctx, commands.CreateProduct{ShopID: "shop_a", Draft: domain.ProductDraft{Title: title,
			Variants: []domain.VariantDraft{{SKU: "SKU-" + title, Price: 10000}}}}, catalogMeta)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ProductID)
		if _, _, err := core.Commands.AdjustInventory(ctx, commands.AdjustInventory{ShopID: "shop_a", Items: []domain.InventorySet{
			{InventoryItemID: ev.Variants[0].InventoryItemID, LocationID: "loc-1", Available: len(title)},
			{InventoryItemID: ev.Variants[0].InventoryItemID, LocationID: "loc-2", Available: 1},
		}}, catalogMeta); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := core.Commands.CreateProduct(ctx, commands.CreateProduct{ShopID: "shop_b", Draft: domain.ProductDraft{Title: "Other"}}, catalogMeta); err != nil {
		t.Fatal(err)
	}
	archived := "archived"
	res, _, err := core.Commands.UpdateProduct(ctx, commands.UpdateProduct{ShopID: "shop_a", ProductID: ids[0], Changes: domain.ProductChanges{Status: &archived}}, catalogMeta)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := core.Commands.UpdateProduct(ctx, commands.UpdateProduct{ShopID: "shop_b", ProductID: ids[0], Changes: domain.ProductChanges{Status: &archived}}, catalogMeta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop's product: %v", err)
	}
	live.WaitFor(t, res.Position)
	q := commerce.NewQueries(live.DB())

	var titles []string
	lq := commerce.ProductListQuery{Shop: "shop_a", Sort: commerce.ProductSortTitle, Limit: 2}
	for pages := 0; ; pages++ {
		rows, next, err := q.Products(ctx, lq)
		if err != nil || pages > 5 {
			t.Fatal(err, pages)
		}
		for _, p := range rows {
			titles = append(titles, p.Title)
		}
		if next == nil {
			break
		}
		lq.After = next
	}
	if want := []string{"Alpha", "Bravo", "Charlie", "Delta", "Echo"}; !reflect.DeepEqual(titles, want) {
		t.Fatalf("titles %v", titles)
	}
	rows, _, err := q.Products(ctx, commerce.ProductListQuery{Shop: "shop_a", Status: "archived", Sort: commerce.ProductSortCreatedAt, Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].ID != ids[0] {
		t.Fatalf("archived: %+v %v", rows, err)
	}

	levels, next, err := q.InventoryLevels(ctx, commerce.InventoryListQuery{Shop: "shop_a", SKU: "SKU-Alpha", Sort: commerce.InventorySortItemID, Limit: 10})
	if err != nil || next != nil || len(levels) != 2 || levels[0].ProductID != ids[1] || levels[0].SKU != "SKU-Alpha" {
		t.Fatalf("levels of SKU-Alpha: %+v %v", levels, err)
	}
	var seen int
	iq := commerce.InventoryListQuery{Shop: "shop_a", LocationID: "loc-1", Sort: commerce.InventorySortUpdatedAt, Desc: true, Limit: 3}
	for {
		page, next, err := q.InventoryLevels(ctx, iq)
		if err != nil {
			t.Fatal(err)
		}
		seen += len(page)
		if next == nil {
			break
		}
		iq.After = next
	}
	if seen != 5 {
		t.Fatalf("levels at loc-1: %d, want 5", seen)
	}

	rebuilt := core.ReadSide(t, commerce.Projector(core.Codec))
	rebuilt.WaitFor(t, res.Position)
	for _, table := range []string{"products", "product_variants", "inventory_levels"} {
		a, b := testenv.Dump(t, live.DB(), table, tables[table]), testenv.Dump(t, rebuilt.DB(), table, tables[table])
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: the rebuilt read model differs:\n%v\n%v", table, a, b)
		}
	}
}
