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

func open(t *testing.T, path string) *lastuse.Store {
	t.Helper()
	s, err := lastuse.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Counts add up across saves, stay apart per shop, token and period, and
// survive closing and reopening the file.
func TestRequestCountsAddUp(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lastuse.db")
	s := open(t, path)
	save := func(counts ...auth.RequestCount) {
		t.Helper()
		if err := s.SaveUses(ctx, nil, counts); err != nil {
			t.Fatal(err)
		}
	}
	save(auth.RequestCount{ShopID: "shop_a", TokenID: "tok_1", Period: 202611, Count: 5},
		auth.RequestCount{ShopID: "shop_a", TokenID: "tok_2", Period: 202611, Count: 1},
		auth.RequestCount{ShopID: "shop_a", TokenID: "tok_1", Period: 202610, Count: 7},
		auth.RequestCount{ShopID: "shop_b", TokenID: "tok_3", Period: 202611, Count: 2})
	save(auth.RequestCount{ShopID: "shop_a", TokenID: "tok_1", Period: 202611, Count: 3})
	save()
	check := func(shop string, p auth.Period, want map[string]int64) {
		t.Helper()
		got, err := s.RequestCounts(ctx, shop, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s %d: %v, want %v", shop, p, got, want)
		}
		for k, n := range want {
			if got[k] != n {
				t.Fatalf("%s %d: %v, want %v", shop, p, got, want)
			}
		}
	}
	check("shop_a", 202611, map[string]int64{"tok_1": 8, "tok_2": 1})
	check("shop_a", 202610, map[string]int64{"tok_1": 7})
	check("shop_b", 202611, map[string]int64{"tok_3": 2})
	check("shop_b", 202610, map[string]int64{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	save(auth.RequestCount{ShopID: "shop_a", TokenID: "tok_1", Period: 202611, Count: 2})
	check("shop_a", 202611, map[string]int64{"tok_1": 10, "tok_2": 1})
}

// A save whose context is already cancelled saves nothing: neither the
// uses nor the counts of the batch (one transaction).
func TestSaveIsOneTransaction(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "lastuse.db"))
	defer s.Close()
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.SaveUses(ctx, []auth.Use{{TokenID: "tok_1", At: at}}, []auth.RequestCount{{ShopID: "shop_a", TokenID: "tok_1", Period: 202611, Count: 1}})
	if err == nil {
		t.Fatal("save with a cancelled context succeeded")
	}
	if got, _ := s.RequestCounts(context.Background(), "shop_a", 202611); len(got) != 0 {
		t.Fatalf("counts saved by a failed batch: %v", got)
	}
	if _, ok, _ := s.Get(context.Background(), "tok_1"); ok {
		t.Fatal("use saved by a failed batch")
	}
	ip := netip.MustParseAddr("2001:db8::1")
	if err := s.SaveUses(context.Background(), []auth.Use{{TokenID: "tok_1", At: at, IP: ip}, {TokenID: "tok_2", At: at}},
		[]auth.RequestCount{{ShopID: "shop_a", TokenID: "tok_1", Period: 202611, Count: 1}}); err != nil {
		t.Fatal(err)
	}
	// An older use does not replace a newer one.
	if err := s.SaveUses(context.Background(), []auth.Use{{TokenID: "tok_1", At: at.Add(-time.Hour)}}, nil); err != nil {
		t.Fatal(err)
	}
	if u, ok, err := s.Get(context.Background(), "tok_1"); err != nil || !ok || !u.At.Equal(at) || u.IP != ip {
		t.Fatalf("last use %v %v %v", u, ok, err)
	}
}
