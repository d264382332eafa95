package commands_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

func TestCatalogCommands(t *testing.T) {
	ctx := context.Background()
	h, log := newHandler(t)
	res, ev, err := h.CreateProduct(ctx, commands.CreateProduct{ShopID: "shop_1", Draft: domain.ProductDraft{Title: "Mug"}}, meta)
	if err != nil || res.ID != ev.ProductID || streamLen(t, log, domain.ProductStream(ev.ProductID)) != 1 {
		t.Fatalf("create: %+v %v", res, err)
	}
	if _, _, err := h.CreateProduct(ctx, commands.CreateProduct{ShopID: "shop_1"}, meta); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("create without title: %v", err)
	}

	// A platform product can be changed too; another shop cannot see it.
	rec, err := h.RecordProduct(ctx, commands.RecordProduct{Delivered: commands.Delivered{ShopID: "shop_1", Topic: "products/create"},
		Snapshot: domain.ProductSnapshot{ExternalID: "42", Title: "Shirt"}}, meta)
	if err != nil {
		t.Fatal(err)
	}
	title := "Shirt 2"
	if _, _, err := h.UpdateProduct(ctx, commands.UpdateProduct{ShopID: "shop_1", ProductID: rec.ID, Changes: domain.ProductChanges{Title: &title}}, meta); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.UpdateProduct(ctx, commands.UpdateProduct{ShopID: "shop_2", ProductID: rec.ID, Changes: domain.ProductChanges{Title: &title}}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop: %v", err)
	}
	if _, _, err := h.UpdateProduct(ctx, commands.UpdateProduct{ShopID: "shop_1", ProductID: "cus_1", Changes: domain.ProductChanges{Title: &title}}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("not a product id: %v", err)
	}
	if n := streamLen(t, log, domain.ProductStream(rec.ID)); n != 2 {
		t.Fatalf("product stream has %d events, want 2", n)
	}

	// A bad item rejects the bulk update: nothing is appended.
	before, err := log.HeadPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = h.AdjustInventory(ctx, commands.AdjustInventory{ShopID: "shop_1", Items: []domain.InventorySet{
		{InventoryItemID: "i", LocationID: "l", Available: 1}, {InventoryItemID: "i"}}}, meta)
	var bulk *domain.BulkError
	if !errors.As(err, &bulk) || len(bulk.Items) != 1 || bulk.Items[0].Index != 1 {
		t.Fatalf("bulk: %v", err)
	}
	if after, _ := log.HeadPosition(ctx); after != before {
		t.Fatalf("a rejected bulk update appended: %d → %d", before, after)
	}
	res, adj, err := h.AdjustInventory(ctx, commands.AdjustInventory{ShopID: "shop_1", Items: []domain.InventorySet{
		{InventoryItemID: "i", LocationID: "l", Available: 1}, {InventoryItemID: "i", LocationID: "m", Available: 2}}}, meta)
	if err != nil || res.ID != adj.AdjustmentID || streamLen(t, log, domain.InventoryAdjustmentStream(adj.AdjustmentID)) != 1 {
		t.Fatalf("adjust: %+v %v", res, err)
	}
}
