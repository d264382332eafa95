package commands_test

import (
	"context"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
)

func TestShopErasureCommands(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { return now })
	h := core.Commands
	acc, err := h.CreateAccount(ctx, commands.CreateAccount{Name: "Agency", Plan: "agency"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	shop, err := h.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: "gone.example", Plan: "agency", WebhookSecret: "0123456789abcdef"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	stream := domain.ShopStream(shop.ID)
	uninstall := func(id string) {
		t.Helper()
		if _, err := h.UninstallApp(ctx, commands.UninstallApp{Delivered: commands.Delivered{ShopID: shop.ID, EventID: eventlog.DeterministicID("test", id)}, At: now}, meta); err != nil {
			t.Fatal(err)
		}
	}
	erase := func(at time.Time) error {
		_, err := h.EraseShop(ctx, commands.EraseShop{ShopID: shop.ID, Reason: domain.ShopErasedRetention, At: at}, meta)
		return err
	}

	// The countdown cannot erase an installed shop, nor before its due date.
	if err := erase(now); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("erasing an installed shop: %v", err)
	}
	uninstall("u1")
	due := now.Add(domain.RetentionAfterUninstall)
	if err := erase(due.Add(-time.Second)); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("erasing before the due date: %v", err)
	}
	// A reinstall cancels the countdown; reinstalling twice records once.
	for range 2 {
		if _, err := h.ReinstallApp(ctx, commands.ReinstallApp{ShopID: shop.ID}, meta); err != nil {
			t.Fatal(err)
		}
	}
	if err := erase(due.Add(time.Hour)); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("erasing a reinstalled shop: %v", err)
	}
	// Uninstalled again, past the due date: erased, once.
	uninstall("u2")
	before := streamLen(t, core.Log, stream)
	for range 2 {
		if err := erase(due.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.EraseShop(ctx, commands.EraseShop{ShopID: shop.ID, Reason: domain.ShopErasedRedact, RequestEventID: "e1"}, meta); err != nil {
		t.Fatal(err)
	}
	if got := streamLen(t, core.Log, stream); got != before+1 {
		t.Fatalf("%d events appended by three erasures, want 1", got-before)
	}
	// Before and after the shred, commands on the shop answer not found.
	// (Other streams than the shop's fail once the key is shredded, which
	// the reactor does at once: nothing sealed can be written any more.)
	check := func(when string, shredded bool) {
		t.Helper()
		if _, err := h.ReinstallApp(ctx, commands.ReinstallApp{ShopID: shop.ID}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
			t.Fatalf("%s: reinstall: %v", when, err)
		}
		if _, err := h.ChangeShopPlan(ctx, commands.ChangeShopPlan{ShopID: shop.ID, Plan: "growth"}, meta); domain.ErrorCode(err) != domain.CodeNotFound {
			t.Fatalf("%s: change plan: %v", when, err)
		}
		if shredded {
			cus := commands.RecordCustomer{ShopID: shop.ID, Profile: domain.CustomerProfile{ExternalID: "42"}}
			if _, err := h.RecordCustomer(ctx, cus, meta); domain.ErrorCode(err) != domain.CodeNotFound {
				t.Fatalf("%s: record customer: %v", when, err)
			}
		}
		if err := erase(due.Add(time.Hour)); err != nil {
			t.Fatalf("%s: erasing again: %v", when, err)
		}
	}
	check("before the shred", false)
	if err := core.Keys.ShredShop(ctx, shop.ID); err != nil {
		t.Fatal(err)
	}
	check("after the shred", true)
}
