package httpapi_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/httpapi"
)

func customerList() httpapi.ListSpec {
	return httpapi.ListSpec{
		Resource: "customers",
		Filters: map[string]httpapi.FilterKind{
			"lifecycle_stage": httpapi.EnumFilter("prospect", "new", "active", "loyal", "at_risk", "churned"),
			"date_from":       httpapi.DateFilter(),
			"min_spent":       httpapi.NumberFilter(),
			"tag":             httpapi.StringFilter(),
		},
		Sorts:       []string{"last_order_at", "created_at", "total_spent"},
		DefaultSort: "-created_at",
		Includes:    []string{"orders", "touchpoints"},
		Params:      []string{"min_position"},
	}
}

func parse(t *testing.T, query string, codec *httpapi.CursorCodec) (httpapi.ListParams, error) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/api/v1/customers", nil)
	r.URL.RawQuery = query
	return httpapi.ParseList(r, customerList(), codec)
}

func TestParseListDefaults(t *testing.T) {
	p, err := parse(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Limit != 25 || p.Sort != (httpapi.Sort{Field: "created_at", Desc: true}) || len(p.Filters) != 0 ||
		p.Include != nil || p.Cursor != nil {
		t.Fatalf("defaults = %+v", p)
	}
}

func TestParseListValid(t *testing.T) {
	p, err := parse(t, "limit=100&sort=total_spent&filter[lifecycle_stage]=loyal&filter[date_from]=2026-02-28"+
		"&filter[min_spent]=-10.50&filter[tag]=vip%20list&include=touchpoints,orders,touchpoints&min_position=42", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Limit != 100 || p.Sort.String() != "total_spent" || p.Filters["lifecycle_stage"] != "loyal" ||
		p.Filters["min_spent"] != "-10.50" || p.Filters["tag"] != "vip list" || p.Params["min_position"] != "42" {
		t.Errorf("params = %+v", p)
	}
	if !slices.Equal(p.Include, []string{"touchpoints", "orders"}) {
		t.Errorf("include = %v", p.Include)
	}
	if d, ok := p.FilterDate("date_from"); !ok || !d.Equal(time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("FilterDate = %v %v", d, ok)
	}
	if p, err := parse(t, "limit=1&sort=-last_order_at", nil); err != nil || p.Limit != 1 || !p.Sort.Desc || p.Sort.Field != "last_order_at" {
		t.Errorf("limit=1&sort=-last_order_at: %+v %v", p, err)
	}
}

func TestParseListRejects(t *testing.T) {
	cases := []struct{ query, field string }{
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=abc", "limit"},
		{"limit=", "limit"},
		{"limit=10&limit=20", "limit"},
		{"foo=1", "foo"},
		{"page=2", "page"},
		{"filter[email]=a@b.example", "filter[email]"},
		{"filter[]=x", "filter[]"},
		{"filter[lifecycle_stage]=vip", "filter[lifecycle_stage]"},
		{"filter[lifecycle_stage]=", "filter[lifecycle_stage]"},
		{"filter[lifecycle_stage]=loyal&filter[lifecycle_stage]=new", "filter[lifecycle_stage]"},
		{"filter[date_from]=2026-13-01", "filter[date_from]"},
		{"filter[date_from]=2026-2-1", "filter[date_from]"},
		{"filter[date_from]=2026-02-30", "filter[date_from]"},
		{"filter[min_spent]=1e3", "filter[min_spent]"},
		{"filter[min_spent]=0x10", "filter[min_spent]"},
		{"filter[min_spent]=NaN", "filter[min_spent]"},
		{"filter[min_spent]=1.", "filter[min_spent]"},
		{"filter[tag]=", "filter[tag]"},
		{"sort=email", "sort"},
		{"sort=--created_at", "sort"},
		{"sort=", "sort"},
		{"sort=created_at,total_spent", "sort"},
		{"include=secrets", "include"},
		{"include=orders,", "include"},
		{"min_position=1&min_position=2", "min_position"},
		{"bad=%zz", "query"},
		{"a=1;b=2", "query"},
	}
	for _, c := range cases {
		_, err := parse(t, c.query, nil)
		var he *httpapi.Error
		if !errors.As(err, &he) || he.Status != 400 || he.Code != "invalid_parameter" || he.Details["field"] != c.field {
			t.Errorf("%q: err = %v (details %v), want 400 invalid_parameter field %q", c.query, err, detailsOf(he), c.field)
		}
	}
}

func detailsOf(e *httpapi.Error) map[string]any {
	if e == nil {
		return nil
	}
	return e.Details
}

func TestParseListCursorWalk(t *testing.T) {
	codec := mustCodec(t, testKey(3))
	first, err := parse(t, "filter[lifecycle_stage]=loyal&limit=2", codec)
	if err != nil {
		t.Fatal(err)
	}
	next, err := first.NextCursor(position{ID: "cus_2"})
	if err != nil {
		t.Fatal(err)
	}
	// Same filters and sort, another limit, explicit default sort: valid.
	second, err := parse(t, "filter[lifecycle_stage]=loyal&limit=50&sort=-created_at&cursor="+next, codec)
	if err != nil {
		t.Fatal(err)
	}
	var after position
	if second.Cursor == nil {
		t.Fatal("no cursor on the second page")
	}
	if err := second.Cursor.Decode(&after); err != nil || after.ID != "cus_2" {
		t.Fatalf("Cursor.Decode = %v %+v", err, after)
	}
	for _, q := range []string{
		"cursor=" + next, // filter dropped
		"filter[lifecycle_stage]=new&cursor=" + next,                   // filter changed
		"filter[lifecycle_stage]=loyal&sort=created_at&cursor=" + next, // sort changed
		"filter[lifecycle_stage]=loyal&cursor=",
		"filter[lifecycle_stage]=loyal&cursor=" + next + "x",
	} {
		_, err := parse(t, q, codec)
		var he *httpapi.Error
		if !errors.As(err, &he) || he.Code != "invalid_cursor" || he.Status != 400 {
			t.Errorf("%s: err = %v, want invalid_cursor", q, err)
		}
	}
	var wrong struct {
		ID []int `json:"i"`
	}
	err = second.Cursor.Decode(&wrong)
	var he *httpapi.Error
	if !errors.As(err, &he) || he.Code != "invalid_cursor" {
		t.Errorf("a position of another shape: %v, want invalid_cursor", err)
	}
}

func TestParseListSpecMistakesAreInternal(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	for _, spec := range []httpapi.ListSpec{
		{Resource: "x", Sorts: []string{"a"}},
		{Resource: "x", Sorts: []string{"a"}, DefaultSort: "b"},
		{Sorts: []string{"a"}, DefaultSort: "a"},
		{Resource: "x", Sorts: []string{"a"}, DefaultSort: "-a", Filters: map[string]httpapi.FilterKind{"f": {}}},
		{Resource: "x", Sorts: []string{"a"}, DefaultSort: "-a", Filters: map[string]httpapi.FilterKind{"f": httpapi.EnumFilter()}},
	} {
		_, err := httpapi.ParseList(r, spec, nil)
		var he *httpapi.Error
		if err == nil || errors.As(err, &he) {
			t.Errorf("spec %+v: err = %v, want a plain error", spec, err)
		}
	}
	r.URL.RawQuery = "cursor=abc"
	_, err := httpapi.ParseList(r, customerList(), nil)
	var he *httpapi.Error
	if err == nil || errors.As(err, &he) {
		t.Errorf("cursor without codec: err = %v, want a plain error", err)
	}
}
