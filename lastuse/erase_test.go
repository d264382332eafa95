package lastuse_test

import (
	"context"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/lastuse"
)

func TestDeleteShop(t *testing.T) {
	ctx := context.Background()
	st, err := lastuse.Open(filepath.Join(t.TempDir(), "lastuse.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	ip := netip.MustParseAddr("203.0.113.7")
	uses := []auth.Use{{TokenID: "tok_a", At: at, IP: ip}, {TokenID: "tok_b", At: at, IP: ip}, {TokenID: "tok_c", At: at, IP: ip}}
	counts := []auth.RequestCount{{ShopID: "shop_gone", TokenID: "tok_a", Period: 202611, Count: 3},
		{ShopID: "shop_kept", TokenID: "tok_c", Period: 202611, Count: 1}}
	if err := st.SaveUses(ctx, uses, counts); err != nil {
		t.Fatal(err)
	}
	// tok_a is found through the shop's counts, tok_b is named.
	if err := st.DeleteShop(ctx, "shop_gone", []string{"tok_b"}); err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]bool{"tok_a": false, "tok_b": false, "tok_c": true} {
		if _, ok, err := st.Get(ctx, tok); err != nil || ok != want {
			t.Fatalf("%s: found %v %v, want %v", tok, ok, err, want)
		}
	}
	if n, err := st.RequestCounts(ctx, "shop_gone", 202611); err != nil || len(n) != 0 {
		t.Fatalf("counts of the erased shop: %v %v", n, err)
	}
	if n, err := st.RequestCounts(ctx, "shop_kept", 202611); err != nil || n["tok_c"] != 1 {
		t.Fatalf("counts of the other shop: %v %v", n, err)
	}
}
