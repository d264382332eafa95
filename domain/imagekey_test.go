package domain_test

import (
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestImageKeyRevoke(t *testing.T) {
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	var k domain.ImageKey
	if _, err := k.Revoke("shop_1", now); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("revoke a key never issued: %v", err)
	}
	k.Apply(&domain.ImageKeyIssued{KeyID: "cik_id_1", ShopID: "shop_1", Hash: "h"})
	if _, err := k.Revoke("shop_2", now); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("revoke another shop's key: %v", err)
	}
	ev, err := k.Revoke("shop_1", now)
	if err != nil || ev == nil || ev.KeyID != "cik_id_1" || !ev.RevokedAt.Equal(now) {
		t.Fatalf("revoke: %+v %v", ev, err)
	}
	k.Apply(ev)
	if again, err := k.Revoke("shop_1", now); err != nil || again != nil {
		t.Fatalf("revoke twice: %+v %v", again, err)
	}
}
