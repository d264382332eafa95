package readapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cgp-platform/cgp/httpapi"
)

// page is a page of orders: two of cus_a, one of cus_b, one of a customer
// without a profile, one without a customer.
func page() []httpapi.Resource {
	var out []httpapi.Resource
	for i, c := range []string{"cus_a", "cus_b", "cus_a", "cus_gone", ""} {
		res := httpapi.Resource{ID: fmt.Sprintf("ord_%d", i), Type: "order", Attributes: c}
		if c != "" {
			res.Relationships = map[string]httpapi.Relationship{"customer": httpapi.RelatedLink("/api/v1/customers/" + c)}
		}
		out = append(out, res)
	}
	return out
}

func TestEmbedLoadsOncePerRelationAndIncludesEachOnce(t *testing.T) {
	var calls [][]string
	rel := Relation{
		Name: "customer",
		Key:  func(res httpapi.Resource) string { s, _ := res.Attributes.(string); return s },
		Load: func(_ context.Context, keys []string) (map[string][]httpapi.Resource, error) {
			calls = append(calls, keys)
			out := map[string][]httpapi.Resource{}
			for _, k := range keys {
				if k != "cus_gone" {
					out[k] = []httpapi.Resource{{ID: k, Type: "customer"}}
				}
			}
			return out, nil
		},
	}
	items := page()
	included, err := embed(context.Background(), []string{"customer"}, []Relation{rel}, items)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || !slices.Equal(calls[0], []string{"cus_a", "cus_b", "cus_gone"}) {
		t.Fatalf("Load calls %v, want one with each key once", calls)
	}
	if len(included) != 2 || included[0].ID != "cus_a" || included[1].ID != "cus_b" {
		t.Fatalf("included %v", included)
	}
	for i, want := range []any{
		httpapi.ResourceID{Type: "customer", ID: "cus_a"}, httpapi.ResourceID{Type: "customer", ID: "cus_b"},
		httpapi.ResourceID{Type: "customer", ID: "cus_a"}, nil,
	} {
		if got := items[i].Relationships["customer"].Data; got != want {
			t.Errorf("%s: data %v, want %v", items[i].ID, got, want)
		}
	}

	// Not asked for: no Load, no included member, no data.
	calls = nil
	items = page()
	if included, err := embed(context.Background(), nil, []Relation{rel}, items); err != nil || included != nil || calls != nil ||
		items[0].Relationships["customer"].Data != nil {
		t.Fatalf("without include: %v %v %v", included, err, calls)
	}
}

func TestEmbedToManyAndErrors(t *testing.T) {
	rel := Relation{
		Name: "inventory", ToMany: true,
		Key: func(res httpapi.Resource) string { return res.ID },
		Load: func(_ context.Context, keys []string) (map[string][]httpapi.Resource, error) {
			return map[string][]httpapi.Resource{"prd_1": {{ID: "lvl_1", Type: "inventory_level"}, {ID: "lvl_2", Type: "inventory_level"}}}, nil
		},
	}
	items := []httpapi.Resource{
		{ID: "prd_1", Type: "product", Relationships: map[string]httpapi.Relationship{"inventory": httpapi.RelatedLink("/x")}},
		{ID: "prd_2", Type: "product", Relationships: map[string]httpapi.Relationship{"inventory": httpapi.RelatedLink("/y")}},
	}
	included, err := embed(context.Background(), []string{"inventory"}, []Relation{rel}, items)
	if err != nil || len(included) != 2 {
		t.Fatalf("included %v %v", included, err)
	}
	if got := fmt.Sprint(items[0].Relationships["inventory"].Data); got != "[{inventory_level lvl_1} {inventory_level lvl_2}]" {
		t.Errorf("prd_1 data %s", got)
	}
	if got, ok := items[1].Relationships["inventory"].Data.([]httpapi.ResourceID); !ok || len(got) != 0 {
		t.Errorf("prd_2 data %#v, want an empty array", items[1].Relationships["inventory"].Data)
	}

	boom := errors.New("read failed")
	rel.Load = func(context.Context, []string) (map[string][]httpapi.Resource, error) { return nil, boom }
	if _, err := embed(context.Background(), []string{"inventory"}, []Relation{rel}, items); !errors.Is(err, boom) {
		t.Fatalf("a failed Load: %v", err)
	}
}
