package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/domain"
)

var catalogNow = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

func TestNewProductDefaultsAndRules(t *testing.T) {
	ev, err := domain.NewProduct("shop_1", domain.ProductDraft{Title: "  Linen Shirt! ", Tags: []string{"a", " a"},
		Variants: []domain.VariantDraft{{SKU: "S-1", Price: 599000}}}, catalogNow)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Title != "Linen Shirt!" || ev.Handle != "linen-shirt" || ev.Status != "active" || len(ev.Tags) != 1 ||
		!domain.HasPrefixID(ev.ProductID, domain.PrefixProduct) || len(ev.Variants) != 1 ||
		!domain.HasPrefixID(ev.Variants[0].VariantID, domain.PrefixVariant) || !domain.HasPrefixID(ev.Variants[0].InventoryItemID, domain.PrefixInventoryItem) {
		t.Fatalf("product %+v", ev)
	}
	for field, d := range map[string]domain.ProductDraft{
		"title":             {Title: " "},
		"status":            {Title: "x", Status: "live"},
		"vendor":            {Title: "x", Vendor: strings.Repeat("v", 256)},
		"variants[1].price": {Title: "x", Variants: []domain.VariantDraft{{Price: 1}, {Price: -1}}},
		"variants":          {Title: "x", Variants: make([]domain.VariantDraft, 101)},
		"tags":              {Title: "x", Tags: []string{""}},
	} {
		_, err := domain.NewProduct("shop_1", d, catalogNow)
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.CodeInvalid || de.Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
}

func TestCatalogProductUpdate(t *testing.T) {
	var p domain.CatalogProduct
	title := "New"
	if _, err := p.Update("shop_1", "prd_1", domain.ProductChanges{Title: &title}, catalogNow); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("missing product: %v", err)
	}
	p.Apply(&domain.ProductRecorded{ProductID: "prd_1", ShopID: "shop_1"})
	if _, err := p.Update("shop_2", "prd_1", domain.ProductChanges{Title: &title}, catalogNow); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop's product: %v", err)
	}
	if _, err := p.Update("shop_1", "prd_1", domain.ProductChanges{}, catalogNow); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("empty change: %v", err)
	}
	ev, err := p.Update("shop_1", "prd_1", domain.ProductChanges{Title: &title}, catalogNow)
	if err != nil || *ev.Title != "New" || ev.Status != nil || ev.Tags != nil {
		t.Fatalf("update: %+v %v", ev, err)
	}
	p.Apply(&domain.ProductDeleted{ProductID: "prd_1"})
	if _, err := p.Update("shop_1", "prd_1", domain.ProductChanges{Title: &title}, catalogNow); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("deleted product: %v", err)
	}
}

func TestAdjustInventoryIsAllOrNothing(t *testing.T) {
	ok := domain.InventorySet{InventoryItemID: "i1", LocationID: "l1", Available: 3}
	ev, err := domain.AdjustInventory("shop_1", []domain.InventorySet{ok}, catalogNow)
	if err != nil || len(ev.Items) != 1 || ev.Items[0].LevelID != domain.InventoryLevelID("shop_1", "i1", "l1") ||
		!domain.HasPrefixID(ev.AdjustmentID, domain.PrefixAdjustment) {
		t.Fatalf("adjust: %+v %v", ev, err)
	}
	_, err = domain.AdjustInventory("shop_1", []domain.InventorySet{ok, {LocationID: "l"}, ok,
		{InventoryItemID: "i2", LocationID: "l", Available: 2_000_000_000}}, catalogNow)
	var bulk *domain.BulkError
	if !errors.As(err, &bulk) || len(bulk.Items) != 3 || bulk.Err.Field != "items[1].inventory_item_id" ||
		bulk.Items[1].Index != 2 || bulk.Items[2].Field != "available" || domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("bulk error: %v %+v", err, bulk)
	}
	for _, n := range []int{0, 101} {
		if _, err := domain.AdjustInventory("shop_1", make([]domain.InventorySet, n), catalogNow); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("%d items: %v", n, err)
		}
	}
}

// FuzzNewProduct: any title, handle and SKU either fails validation or
// gives a product whose texts are trimmed, valid and bounded.
func FuzzNewProduct(f *testing.F) {
	f.Add("Linen Shirt", "", "SKU-1", "active")
	f.Add("  ", "h", "", "draft")
	f.Add("Ünïcode — 漢字", "", strings.Repeat("s", 256), "")
	f.Add("\xff\xfe", "x", "y", "live")
	f.Fuzz(func(t *testing.T, title, handle, sku, status string) {
		ev, err := domain.NewProduct("shop_1", domain.ProductDraft{Title: title, Handle: handle, Status: status,
			Variants: []domain.VariantDraft{{SKU: sku, Price: 1}}}, catalogNow)
		if err != nil {
			if domain.ErrorCode(err) != domain.CodeInvalid {
				t.Fatalf("not a validation error: %v", err)
			}
			return
		}
		for _, s := range []string{ev.Title, ev.Handle, ev.Variants[0].SKU} {
			if !utf8.ValidString(s) || utf8.RuneCountInString(s) > domain.MaxCatalogText || strings.TrimSpace(s) != s {
				t.Fatalf("text %q", s)
			}
		}
		if ev.Title == "" {
			t.Fatal("empty title accepted")
		}
	})
}

// FuzzAdjustInventory: an accepted bulk update has one valid level per
// item; a rejected one names only existing items.
func FuzzAdjustInventory(f *testing.F) {
	f.Add("i1", "l1", 5, "i1", "l1", 6)
	f.Add("", "l", 0, "i", "", -1)
	f.Add(" i", "l", 1_000_000_001, "i\x00", "l", 3)
	f.Fuzz(func(t *testing.T, i1, l1 string, a1 int, i2, l2 string, a2 int) {
		items := []domain.InventorySet{{InventoryItemID: i1, LocationID: l1, Available: a1}, {InventoryItemID: i2, LocationID: l2, Available: a2}}
		ev, err := domain.AdjustInventory("shop_1", items, catalogNow)
		var bulk *domain.BulkError
		switch {
		case errors.As(err, &bulk):
			for _, it := range bulk.Items {
				if it.Index < 0 || it.Index > 1 || it.Field == "" {
					t.Fatalf("item error %+v", it)
				}
			}
		case err != nil:
			t.Fatalf("unexpected error %v", err)
		default:
			if len(ev.Items) != 2 || ev.Items[0].LevelID == ev.Items[1].LevelID {
				t.Fatalf("accepted %+v", ev.Items)
			}
		}
	})
}

// TestCatalogProductUpdateVariants: given a product with two variants (and
// a platform snapshot replacing them), when variant patches, then one
// ProductUpdated with a change per variant, or a validation error naming
// the item's field.
func TestCatalogProductUpdateVariants(t *testing.T) {
	created, err := domain.NewProduct("shop_1", domain.ProductDraft{Title: "Mug",
		Variants: []domain.VariantDraft{{SKU: "S", Price: 95000}, {SKU: "L", Price: 120000}}}, catalogNow)
	if err != nil {
		t.Fatal(err)
	}
	a, b := created.Variants[0].VariantID, created.Variants[1].VariantID
	var p domain.CatalogProduct
	p.Apply(created)
	price, neg := domain.Amount(110000), domain.Amount(-1)
	sku := " S2 "
	ev, err := p.Update("shop_1", created.ProductID, domain.ProductChanges{Variants: []domain.VariantPatch{
		{ID: a, Price: &price, SKU: &sku}, {ID: b, ClearCompareAtPrice: true}}}, catalogNow)
	if err != nil || len(ev.Variants) != 2 || *ev.Variants[0].Price != price || *ev.Variants[0].SKU != "S2" ||
		!ev.Variants[1].CompareAtPriceCleared || ev.Title != nil {
		t.Fatalf("update: %+v, %v", ev, err)
	}
	v := created.Variants[0]
	ev.Variants[0].Apply(&v)
	if v.Price != price || v.SKU != "S2" {
		t.Fatalf("applied: %+v", v)
	}
	for _, c := range []struct {
		patches []domain.VariantPatch
		field   string
	}{
		{[]domain.VariantPatch{{ID: "var_other", Price: &price}}, "variants[0].id"},
		{[]domain.VariantPatch{{ID: a, Price: &price}, {ID: "", Price: &price}}, "variants[1].id"},
		{[]domain.VariantPatch{{ID: a, Price: &price}, {ID: a, Price: &price}}, "variants[1].id"},
		{[]domain.VariantPatch{{ID: a}}, "variants[0].id"},
		{[]domain.VariantPatch{{ID: a, Price: &neg}}, "variants[0].price"},
		{[]domain.VariantPatch{{ID: b, CompareAtPrice: &neg}}, "variants[0].compare_at_price"},
	} {
		_, err := p.Update("shop_1", created.ProductID, domain.ProductChanges{Variants: c.patches}, catalogNow)
		var de *domain.Error
		if !errors.As(err, &de) || de.Field != c.field {
			t.Errorf("%+v: %v, want a validation error on %s", c.patches, err, c.field)
		}
	}
	// A platform snapshot replaces the variants: the old ids are gone.
	p.Apply(&domain.ProductRecorded{ProductID: created.ProductID, ShopID: "shop_1",
		ProductSnapshot: domain.ProductSnapshot{Variants: []domain.Variant{{VariantID: "4401"}}}})
	if _, err := p.Update("shop_1", created.ProductID, domain.ProductChanges{Variants: []domain.VariantPatch{{ID: a, Price: &price}}}, catalogNow); err == nil {
		t.Fatal("a variant the snapshot dropped was accepted")
	}
	if _, err := p.Update("shop_1", created.ProductID, domain.ProductChanges{Variants: []domain.VariantPatch{{ID: "4401", Price: &price}}}, catalogNow); err != nil {
		t.Fatal(err)
	}
}
