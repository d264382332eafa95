package versioned_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/readmodel/versioned"
)

func TestValidIdentifier(t *testing.T) {
	for _, ok := range []string{"a", "attribution_orders", "_checkpoints", "t2", strings.Repeat("a", 63)} {
		if err := versioned.ValidIdentifier(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "2t", "A", "a-b", "a b", "a`b", "a\"b", "a;", "é", strings.Repeat("a", 64), "a\x00"} {
		if err := versioned.ValidIdentifier(bad); !errors.Is(err, versioned.ErrInvalid) {
			t.Errorf("%q: got %v, want ErrInvalid", bad, err)
		}
	}
}

// FuzzValidIdentifier checks that every accepted name is made only of the
// bytes no quoting of any engine treats specially.
func FuzzValidIdentifier(f *testing.F) {
	for _, s := range []string{"orders", "a`b", "\"x\"", "_v", "9a", "a\x00b", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if versioned.ValidIdentifier(s) != nil {
			return
		}
		if len(s) == 0 || len(s) > 63 || (s[0] >= '0' && s[0] <= '9') {
			t.Fatalf("accepted %q", s)
		}
		for _, c := range []byte(s) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
				t.Fatalf("accepted %q with byte %q", s, c)
			}
		}
	})
}

var orders = versioned.Table{
	Name: "orders",
	Columns: []versioned.Column{
		{Name: "order_id", Type: versioned.String},
		{Name: "shop_id", Type: versioned.String},
		{Name: "email", Type: versioned.String},
		{Name: "revenue", Type: versioned.Int64},
	},
	Key: []string{"shop_id", "order_id"},
}

func TestTableValidate(t *testing.T) {
	if err := orders.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]versioned.Table{
		"reserved name":   {Name: "_x", Columns: orders.Columns, Key: orders.Key},
		"no key":          {Name: "x", Columns: orders.Columns},
		"unknown key":     {Name: "x", Columns: orders.Columns, Key: []string{"nope"}},
		"repeated key":    {Name: "x", Columns: orders.Columns, Key: []string{"shop_id", "shop_id"}},
		"reserved column": {Name: "x", Columns: []versioned.Column{{Name: "_version", Type: versioned.Int64}}, Key: []string{"_version"}},
		"unknown type":    {Name: "x", Columns: []versioned.Column{{Name: "a", Type: 9}}, Key: []string{"a"}},
		"column twice":    {Name: "x", Columns: []versioned.Column{{Name: "a", Type: versioned.String}, {Name: "a", Type: versioned.String}}, Key: []string{"a"}},
	}
	for name, tb := range bad {
		if err := tb.Validate(); !errors.Is(err, versioned.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestNormalizeRow(t *testing.T) {
	r, err := orders.NormalizeRow(versioned.Row{Values: []any{"o1", "s1", "a@example.com", 5}}, 7)
	if err != nil || r.Version != 7 || r.Values[3] != int64(5) {
		t.Fatalf("got %+v, %v; want version 7 and revenue int64(5)", r, err)
	}
	r, err = orders.NormalizeRow(versioned.Row{Values: []any{"o1", "s1", "a@example.com", int64(5)}, Version: 3, Deleted: true}, 7)
	want := []any{"o1", "s1", "", int64(0)}
	if err != nil || r.Version != 3 || !slices.Equal(r.Values, want) {
		t.Fatalf("tombstone: got %+v, %v; want key kept, the rest zero, version 3", r, err)
	}
	if got := orders.KeyOf(r.Values); !slices.Equal(got, []any{"s1", "o1"}) {
		t.Fatalf("KeyOf: %v", got)
	}
}
