package gencache

import (
	"errors"
	"testing"
)

func TestGetLoadsOnceAndInvalidateDrops(t *testing.T) {
	c := New[string, int](10)
	loads := 0
	load := func() (int, error) { loads++; return loads, nil }
	if v, _ := c.Get("a", load); v != 1 {
		t.Fatalf("first get = %d", v)
	}
	if v, _ := c.Get("a", load); v != 1 || loads != 1 {
		t.Fatalf("hit = %d after %d loads", v, loads)
	}
	c.Invalidate()
	if v, _ := c.Get("a", load); v != 2 {
		t.Fatalf("after Invalidate = %d", v)
	}
}

func TestLookupOverlappingInvalidateIsNotCached(t *testing.T) {
	c := New[string, int](10)
	stale := func() (int, error) { c.Invalidate(); return 1, nil } // the read model changed mid-lookup
	if v, _ := c.Get("a", stale); v != 1 {
		t.Fatalf("get = %d", v)
	}
	if v, _ := c.Get("a", func() (int, error) { return 2, nil }); v != 2 {
		t.Fatalf("a value read across an Invalidate was cached: %d", v)
	}
}

func TestErrorsAreNotCachedAndSizeIsBounded(t *testing.T) {
	c := New[int, int](2)
	if _, err := c.Get(1, func() (int, error) { return 0, errors.New("down") }); err == nil {
		t.Fatal("error swallowed")
	}
	if v, _ := c.Get(1, func() (int, error) { return 7, nil }); v != 7 {
		t.Fatalf("error was cached: %d", v)
	}
	for k := 2; k < 10; k++ {
		c.Get(k, func() (int, error) { return k, nil })
	}
	if n := len(c.items); n > 2 {
		t.Fatalf("%d entries, max 2", n)
	}
}
