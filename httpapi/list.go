package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Page size bounds of every list.
const (
	DefaultLimit = 25
	MaxLimit     = 100
)

// FilterType is the kind of value a filter takes.
type FilterType int

// Filter value kinds.
const (
	// FilterString: any non-empty UTF-8 text of at most 255 bytes.
	FilterString FilterType = iota + 1
	// FilterEnum: one of FilterKind.Values.
	FilterEnum
	// FilterDate: a calendar date YYYY-MM-DD.
	FilterDate
	// FilterNumber: a decimal number, optional minus and fraction
	// ("12", "-3.50"); no exponent, no hex.
	FilterNumber
)

// FilterKind describes the values a filter accepts.
type FilterKind struct {
	Type   FilterType
	Values []string // allowed values, for FilterEnum
}

// StringFilter accepts any non-empty text.
func StringFilter() FilterKind { return FilterKind{Type: FilterString} }

// EnumFilter accepts exactly one of values.
func EnumFilter(values ...string) FilterKind { return FilterKind{Type: FilterEnum, Values: values} }

// DateFilter accepts a date YYYY-MM-DD.
func DateFilter() FilterKind { return FilterKind{Type: FilterDate} }

// NumberFilter accepts a plain decimal number.
func NumberFilter() FilterKind { return FilterKind{Type: FilterNumber} }

// ListSpec is the allow-list of one list endpoint. Declare it once per
// endpoint (a package-level func or a field of the handler), and document the
// same lists in the OpenAPI document.
type ListSpec struct {
	// Resource names the list for cursor binding; include the parent id for
	// nested lists ("customer_orders:" + customerID).
	Resource string
	// Filters allowed as filter[name]=value.
	Filters map[string]FilterKind
	// Sorts are the sortable fields; "-field" sorts descending.
	Sorts []string
	// DefaultSort applies when sort is absent, e.g. "-created_at".
	DefaultSort string
	// Includes are the allowed include values (comma-separated in the query).
	Includes []string
	// Params are further plain query keys the handler reads itself from
	// ListParams.Params (each at most once).
	Params []string
}

// Sort is a parsed sort parameter.
type Sort struct {
	Field string
	Desc  bool
}

// String gives the query form: "field" or "-field".
func (s Sort) String() string {
	if s.Desc {
		return "-" + s.Field
	}
	return s.Field
}

// ListParams is a validated list query.
type ListParams struct {
	// Limit is the page size, 1..MaxLimit (DefaultLimit when absent).
	Limit int
	// Filters holds the validated filter values by field name.
	Filters map[string]string
	// Sort is the requested sort, or the spec's default.
	Sort Sort
	// Include lists the requested includes, without duplicates.
	Include []string
	// Params holds the values of ListSpec.Params present in the query.
	Params map[string]string
	// Cursor is the verified cursor (signature, version and query
	// checked); nil on the first page. Decode its position with
	// Cursor.Decode.
	Cursor *Cursor
	// Fingerprint is the query (resource, effective sort, filters) the
	// list's cursors are bound to; NextCursor uses it.
	Fingerprint Fingerprint

	codec *CursorCodec
}

// Cursor is a verified cursor: issued by us, for this query.
type Cursor struct {
	position json.RawMessage
}

// Decode unmarshals the cursor's position (the value given to NextCursor)
// into dst. A position that does not fit dst is a 400 invalid_cursor.
func (c *Cursor) Decode(dst any) error {
	if err := json.Unmarshal(c.position, dst); err != nil {
		return invalidCursor("the cursor does not fit this list")
	}
	return nil
}

// NextCursor returns the cursor that resumes this query after position.
func (p ListParams) NextCursor(position any) (string, error) {
	if p.codec == nil {
		return "", fmt.Errorf("next cursor for %s: no cursor codec", p.Fingerprint.Resource)
	}
	return p.codec.Encode(p.Fingerprint, position)
}

// FilterDate returns a date filter's value at midnight UTC.
func (p ListParams) FilterDate(name string) (time.Time, bool) {
	v, ok := p.Filters[name]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.DateOnly, v)
	return t, err == nil
}

// ParseList validates r's query against spec: limit (default 25, 1..100),
// cursor (verified with codec and bound to resource, sort and filters), sort,
// include and filter[field]. Any other key, a repeated key or a bad value is
// a 400 invalid_parameter naming the key in details.field; a bad cursor is a
// 400 invalid_cursor. A spec that contradicts itself is a plain error (500).
func ParseList(r *http.Request, spec ListSpec, codec *CursorCodec) (ListParams, error) {
	if err := spec.validate(); err != nil {
		return ListParams{}, err
	}
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return ListParams{}, InvalidParameter("query", "the query string is malformed")
	}
	p := ListParams{Limit: DefaultLimit, codec: codec}
	sortValue := spec.DefaultSort
	cursor := ""

	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys) // report the same error for the same query every time
	for _, key := range keys {
		vs := values[key]
		if len(vs) != 1 {
			return ListParams{}, InvalidParameter(clip(key), "the parameter is given more than once")
		}
		v := vs[0]
		switch {
		case key == "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxLimit {
				return ListParams{}, InvalidParameter("limit", fmt.Sprintf("limit must be an integer from 1 to %d", MaxLimit))
			}
			p.Limit = n
		case key == "cursor":
			if v == "" {
				return ListParams{}, invalidCursor("the cursor is malformed")
			}
			cursor = v
		case key == "sort":
			sortValue = v
			if !validSort(spec, v) {
				return ListParams{}, InvalidParameter("sort", sortMessage(spec))
			}
		case key == "include":
			inc, err := parseInclude(spec, v)
			if err != nil {
				return ListParams{}, err
			}
			p.Include = inc
		case strings.HasPrefix(key, "filter[") && strings.HasSuffix(key, "]"):
			name := key[len("filter[") : len(key)-1]
			kind, ok := spec.Filters[name]
			if !ok {
				return ListParams{}, InvalidParameter(clip(key), "unknown filter"+allowedList(filterNames(spec)))
			}
			if msg := checkFilter(kind, v); msg != "" {
				return ListParams{}, InvalidParameter(key, msg)
			}
			if p.Filters == nil {
				p.Filters = make(map[string]string)
			}
			p.Filters[name] = v
		case slices.Contains(spec.Params, key):
			if p.Params == nil {
				p.Params = make(map[string]string)
			}
			p.Params[key] = v
		default:
			return ListParams{}, InvalidParameter(clip(key), "unknown query parameter")
		}
	}

	p.Sort = Sort{Field: strings.TrimPrefix(sortValue, "-"), Desc: strings.HasPrefix(sortValue, "-")}
	p.Fingerprint = Fingerprint{Resource: spec.Resource, Sort: p.Sort.String(), Filters: p.Filters}

	if cursor != "" {
		if codec == nil {
			return ListParams{}, fmt.Errorf("list %s: cursor given but no cursor codec", spec.Resource)
		}
		raw, err := codec.verify(cursor, p.Fingerprint)
		if err != nil {
			return ListParams{}, err
		}
		p.Cursor = &Cursor{position: raw}
	}
	return p, nil
}

// validate reports a spec that contradicts itself: a programming error.
func (spec ListSpec) validate() error {
	if spec.Resource == "" {
		return fmt.Errorf("list spec: no resource")
	}
	if !validSort(spec, spec.DefaultSort) {
		return fmt.Errorf("list %s: default sort %q is not one of the sorts %v", spec.Resource, spec.DefaultSort, spec.Sorts)
	}
	for name, kind := range spec.Filters {
		switch kind.Type {
		case FilterString, FilterDate, FilterNumber:
		case FilterEnum:
			if len(kind.Values) == 0 {
				return fmt.Errorf("list %s: enum filter %s has no values", spec.Resource, name)
			}
		default:
			return fmt.Errorf("list %s: filter %s has no type", spec.Resource, name)
		}
	}
	return nil
}

func validSort(spec ListSpec, v string) bool {
	return slices.Contains(spec.Sorts, strings.TrimPrefix(v, "-"))
}

func sortMessage(spec ListSpec) string {
	return `unknown sort field (prefix "-" for descending)` + allowedList(spec.Sorts)
}

// ParseInclude validates the `include` parameter of a single-resource GET
// against allowed (comma-separated, no duplicates kept): an unknown value
// or a repeated parameter is a 400 invalid_parameter naming include. Nil
// when the parameter is absent. Lists get the same check from ParseList.
func ParseInclude(r *http.Request, allowed []string) ([]string, error) {
	vs, ok := r.URL.Query()["include"]
	if !ok {
		return nil, nil
	}
	if len(vs) != 1 {
		return nil, InvalidParameter("include", "the parameter is given more than once")
	}
	return parseInclude(ListSpec{Includes: allowed}, vs[0])
}

func parseInclude(spec ListSpec, v string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(v, ",") {
		if !slices.Contains(spec.Includes, part) {
			return nil, InvalidParameter("include", "unknown include value"+allowedList(spec.Includes))
		}
		if !slices.Contains(out, part) {
			out = append(out, part)
		}
	}
	return out, nil
}

// checkFilter returns why v is not a valid value of kind, or "".
func checkFilter(kind FilterKind, v string) string {
	switch kind.Type {
	case FilterString:
		if v == "" || len(v) > 255 || !utf8.ValidString(v) {
			return "the filter value must be non-empty text of at most 255 bytes"
		}
	case FilterEnum:
		if !slices.Contains(kind.Values, v) {
			return "the filter value is not allowed" + allowedList(kind.Values)
		}
	case FilterDate:
		t, err := time.Parse(time.DateOnly, v)
		if err != nil || t.Format(time.DateOnly) != v {
			return "the filter value must be a date YYYY-MM-DD"
		}
	case FilterNumber:
		if !isDecimal(v) {
			return "the filter value must be a decimal number"
		}
	}
	return ""
}

// isDecimal accepts -?digits(.digits)? with at most 40 characters.
func isDecimal(v string) bool {
	if len(v) == 0 || len(v) > 40 {
		return false
	}
	i := 0
	if v[0] == '-' {
		i = 1
	}
	digits, dot := 0, false
	for ; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot && digits > 0 && i < len(v)-1:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

func filterNames(spec ListSpec) []string {
	names := make([]string, 0, len(spec.Filters))
	for n := range spec.Filters {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func allowedList(vals []string) string {
	if len(vals) == 0 {
		return "; none is allowed here"
	}
	return "; allowed: " + strings.Join(vals, ", ")
}

// clip bounds a client-supplied key echoed in details.field.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
