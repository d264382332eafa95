package versioned

import (
	"fmt"
	"math"
)

// Type is the type of a column's values.
type Type int

// Column types. Values are string, int64 and float64 (int, int32 and
// uint32 are accepted on write and stored as int64).
const (
	String Type = iota + 1
	Int64
	Float64
)

// String names the type.
func (t Type) String() string {
	switch t {
	case String:
		return "string"
	case Int64:
		return "int64"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("type(%d)", int(t))
}

// Zero returns the type's zero value.
func (t Type) Zero() any {
	switch t {
	case Int64:
		return int64(0)
	case Float64:
		return float64(0)
	}
	return ""
}

// Column is one column of a table.
type Column struct {
	Name string
	Type Type
}

// Table describes a versioned table.
type Table struct {
	// Name is an identifier (see ValidIdentifier) not starting with '_'
	// (names starting with '_' are the store's own).
	Name    string
	Columns []Column
	// Key names the primary-key columns in key order, e.g. shop_id,
	// order_id: rows are ordered and merged by it.
	Key []string
}

// ValidIdentifier reports whether s may name a table or a column: 1 to 63
// bytes of lowercase ASCII letters, digits and '_', not starting with a
// digit. Adapters still quote identifiers; this keeps every name the same
// in every engine and out of reach of quoting bugs.
func ValidIdentifier(s string) error {
	if len(s) == 0 || len(s) > 63 {
		return fmt.Errorf("identifier of %d bytes, want 1 to 63: %w", len(s), ErrInvalid)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return fmt.Errorf("identifier %q: byte %d not allowed: %w", s, i, ErrInvalid)
		}
	}
	return nil
}

// Validate checks the names, the types and the key.
func (t Table) Validate() error {
	if err := ValidIdentifier(t.Name); err != nil {
		return fmt.Errorf("table name: %w", err)
	}
	if t.Name[0] == '_' {
		return fmt.Errorf("table %s: names starting with '_' are reserved: %w", t.Name, ErrInvalid)
	}
	if len(t.Columns) == 0 {
		return fmt.Errorf("table %s: no columns: %w", t.Name, ErrInvalid)
	}
	seen := make(map[string]bool, len(t.Columns))
	for _, c := range t.Columns {
		if err := ValidIdentifier(c.Name); err != nil {
			return fmt.Errorf("table %s: column: %w", t.Name, err)
		}
		if c.Name[0] == '_' {
			return fmt.Errorf("table %s: column %s: names starting with '_' are reserved: %w", t.Name, c.Name, ErrInvalid)
		}
		if c.Type < String || c.Type > Float64 {
			return fmt.Errorf("table %s: column %s: unknown %s: %w", t.Name, c.Name, c.Type, ErrInvalid)
		}
		if seen[c.Name] {
			return fmt.Errorf("table %s: column %s twice: %w", t.Name, c.Name, ErrInvalid)
		}
		seen[c.Name] = true
	}
	if len(t.Key) == 0 {
		return fmt.Errorf("table %s: no key: %w", t.Name, ErrInvalid)
	}
	inKey := make(map[string]bool, len(t.Key))
	for _, k := range t.Key {
		if !seen[k] || inKey[k] {
			return fmt.Errorf("table %s: key column %q unknown or repeated: %w", t.Name, k, ErrInvalid)
		}
		inKey[k] = true
	}
	return nil
}

// KeyIndexes returns the index in Columns of each key column, in key
// order. The table must be valid.
func (t Table) KeyIndexes() []int {
	idx := make([]int, len(t.Key))
	for i, k := range t.Key {
		for j, c := range t.Columns {
			if c.Name == k {
				idx[i] = j
			}
		}
	}
	return idx
}

// KeyTypes returns the types of the key columns, in key order.
func (t Table) KeyTypes() []Type {
	ts := make([]Type, len(t.Key))
	for i, j := range t.KeyIndexes() {
		ts[i] = t.Columns[j].Type
	}
	return ts
}

// KeyOf returns the key values of values (a whole row), in key order.
func (t Table) KeyOf(values []any) []any {
	key := make([]any, len(t.Key))
	for i, j := range t.KeyIndexes() {
		key[i] = values[j]
	}
	return key
}

// NormalizeRow checks r against t and returns the row to store: values
// converted to the column types, Version set to pos when 0, and for a
// tombstone every non-key value replaced by its zero value.
func (t Table) NormalizeRow(r Row, pos uint64) (Row, error) {
	if len(r.Values) != len(t.Columns) {
		return Row{}, fmt.Errorf("table %s: %d values for %d columns: %w", t.Name, len(r.Values), len(t.Columns), ErrInvalid)
	}
	out := Row{Values: make([]any, len(r.Values)), Version: r.Version, Deleted: r.Deleted}
	if out.Version == 0 {
		out.Version = pos
	}
	if out.Version == 0 || out.Version > math.MaxInt64 {
		return Row{}, fmt.Errorf("table %s: version %d out of range: %w", t.Name, out.Version, ErrInvalid)
	}
	key := make(map[int]bool, len(t.Key))
	for _, j := range t.KeyIndexes() {
		key[j] = true
	}
	for i, c := range t.Columns {
		if r.Deleted && !key[i] {
			out.Values[i] = c.Type.Zero()
			continue
		}
		v, err := Convert(c.Type, r.Values[i])
		if err != nil {
			return Row{}, fmt.Errorf("table %s: column %s: %w", t.Name, c.Name, err)
		}
		out.Values[i] = v
	}
	return out, nil
}

// NormalizeKey checks that vals are values of the first len(vals) key
// columns (at most all of them) and converts them.
func (t Table) NormalizeKey(vals []any) ([]any, error) {
	if len(vals) > len(t.Key) {
		return nil, fmt.Errorf("table %s: %d key values for a key of %d: %w", t.Name, len(vals), len(t.Key), ErrInvalid)
	}
	types := t.KeyTypes()
	out := make([]any, len(vals))
	for i, v := range vals {
		c, err := Convert(types[i], v)
		if err != nil {
			return nil, fmt.Errorf("table %s: key column %s: %w", t.Name, t.Key[i], err)
		}
		out[i] = c
	}
	return out, nil
}

// NormalizeQuery checks q against t and returns it with converted values.
func (t Table) NormalizeQuery(q Query) (Query, error) {
	if q.Limit < 1 || q.Limit > MaxLimit {
		return Query{}, fmt.Errorf("table %s: limit %d, want 1 to %d: %w", t.Name, q.Limit, MaxLimit, ErrInvalid)
	}
	if len(q.After) != 0 && len(q.After) != len(t.Key) {
		return Query{}, fmt.Errorf("table %s: cursor of %d values for a key of %d: %w", t.Name, len(q.After), len(t.Key), ErrInvalid)
	}
	var err error
	out := Query{Limit: q.Limit, Desc: q.Desc}
	if out.Prefix, err = t.NormalizeKey(q.Prefix); err != nil {
		return Query{}, fmt.Errorf("prefix: %w", err)
	}
	if out.After, err = t.NormalizeKey(q.After); err != nil {
		return Query{}, fmt.Errorf("cursor: %w", err)
	}
	return out, nil
}

// Convert returns v as a value of type t, or an error matching ErrInvalid.
func Convert(t Type, v any) (any, error) {
	switch t {
	case String:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case Int64:
		switch n := v.(type) {
		case int64:
			return n, nil
		case int:
			return int64(n), nil
		case int32:
			return int64(n), nil
		case uint32:
			return int64(n), nil
		}
	case Float64:
		if f, ok := v.(float64); ok {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("float %v not storable: %w", f, ErrInvalid)
			}
			return f, nil
		}
	}
	return nil, fmt.Errorf("%T where %s is expected: %w", v, t, ErrInvalid)
}
