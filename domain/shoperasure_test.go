package domain_test

import (
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestReinstallBySubscription(t *testing.T) {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	uninstalled := func() *domain.Shop {
		s := &domain.Shop{}
		s.Apply(&domain.ShopCreated{ShopID: "shop_1"})
		s.Apply(&domain.AppUninstalled{ShopID: "shop_1", UninstalledAt: at, RetentionDueAt: at.Add(domain.RetentionAfterUninstall)})
		return s
	}
	installed := &domain.Shop{}
	installed.Apply(&domain.ShopCreated{ShopID: "shop_1"})
	erased := uninstalled()
	erased.Apply(&domain.ShopErased{ShopID: "shop_1"})
	for _, tc := range []struct {
		name    string
		shop    *domain.Shop
		status  string
		updated time.Time
		want    bool
	}{
		{"active after the uninstall", uninstalled(), "ACTIVE", at.Add(time.Hour), true},
		{"active before the uninstall (a late delivery)", uninstalled(), "ACTIVE", at.Add(-time.Hour), false},
		{"cancelled after the uninstall", uninstalled(), "CANCELLED", at.Add(time.Hour), false},
		{"installed shop", installed, "ACTIVE", at.Add(time.Hour), false},
		{"erased shop", erased, "ACTIVE", at.Add(time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.shop.ReinstallBySubscription(tc.status, tc.updated)
			if (got != nil) != tc.want {
				t.Fatalf("reinstall %+v, want %v", got, tc.want)
			}
			if got != nil {
				tc.shop.Apply(got)
				if tc.shop.Uninstalled || !tc.shop.RetentionDueAt.IsZero() {
					t.Fatalf("shop after the reinstall %+v", tc.shop)
				}
			}
		})
	}
}

func TestEraseShopDecisions(t *testing.T) {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	s := &domain.Shop{}
	if _, err := s.EraseShop(domain.ShopErasedRedact, "", at); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("unknown shop: %v", err)
	}
	s.Apply(&domain.ShopCreated{ShopID: "shop_1"})
	if _, err := s.EraseShop("whim", "", at); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("bad reason: %v", err)
	}
	// shop/redact erases whatever the install state.
	ev, err := s.EraseShop(domain.ShopErasedRedact, "e1", at)
	if err != nil || ev == nil || ev.ShopID != "shop_1" || ev.RequestEventID != "e1" || !ev.ErasedAt.Equal(at) || !ev.Unsealed() {
		t.Fatalf("erase: %+v %v", ev, err)
	}
	s.Apply(ev)
	if s.Exists || !s.Erased {
		t.Fatalf("shop after erasure %+v", s)
	}
	if ev, err := s.EraseShop(domain.ShopErasedRedact, "e2", at); ev != nil || err != nil {
		t.Fatalf("second erasure: %+v %v", ev, err)
	}
	if _, err := s.ChangePlan("growth", at); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("plan change of an erased shop: %v", err)
	}
	if _, err := s.UninstallApp(at); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("uninstall of an erased shop: %v", err)
	}
}
