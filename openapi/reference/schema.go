package reference

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// refName is the component a reference points to ("Customer" for
// "#/components/schemas/Customer"), or "".
func refName(s *openapi3.SchemaRef) string {
	if s == nil || s.Ref == "" {
		return ""
	}
	return s.Ref[strings.LastIndex(s.Ref, "/")+1:]
}

// typeName summarises a schema: "string (date-time)", "array of Customer",
// "object (Customer)", "one of A | B".
func typeName(s *openapi3.SchemaRef) string {
	return typeNameDepth(s, 0)
}

func typeNameDepth(s *openapi3.SchemaRef, depth int) string {
	if s == nil || s.Value == nil {
		return ""
	}
	v := s.Value
	name := refName(s)
	if depth > 3 {
		if name != "" {
			return name
		}
		return "…"
	}
	var t string
	switch {
	case v.Type != nil && v.Type.Includes("array") && v.Items != nil:
		if items := refName(v.Items); items != "" {
			t = "array of " + items
		} else {
			t = "array of " + typeNameDepth(v.Items, depth+1)
		}
	case v.Type != nil && !v.Type.IsEmpty():
		t = strings.Join(v.Type.Slice(), " | ")
		if v.Format != "" {
			t += " (" + v.Format + ")"
		}
	case len(v.OneOf) > 0 || len(v.AnyOf) > 0:
		subs := v.OneOf
		word := "one of "
		if len(subs) == 0 {
			subs, word = v.AnyOf, "any of "
		}
		parts := make([]string, 0, len(subs))
		for _, sub := range subs {
			parts = append(parts, typeNameDepth(sub, depth+1))
		}
		t = word + strings.Join(parts, " | ")
	case len(v.AllOf) > 0 || len(v.Properties) > 0:
		t = "object"
	case v.Const != nil:
		t = fmt.Sprintf("const %v", v.Const)
	case len(v.Enum) > 0:
		t = "enum"
	default:
		t = "any"
	}
	if name != "" && !strings.HasSuffix(t, name) {
		t += " (" + name + ")"
	}
	return t
}

func enumValues(v *openapi3.Schema) []string {
	if v == nil {
		return nil
	}
	out := make([]string, 0, len(v.Enum))
	for _, e := range v.Enum {
		if e == nil {
			out = append(out, "null")
			continue
		}
		out = append(out, fmt.Sprint(e))
	}
	if v.Const != nil && len(out) == 0 {
		out = append(out, fmt.Sprint(v.Const))
	}
	return out
}

// schemaRows flattens a schema's properties into table rows, nested ones
// deeper; allOf parts are merged, oneOf/anyOf variants listed. A schema that
// refers to itself, directly or through others, stops at the first
// repetition with a note, and nesting stops at maxDepth.
func (b *builder) schemaRows(s *openapi3.SchemaRef) []Row {
	w := &rowWalker{b: b}
	w.object(s, 0, nil)
	return w.rows
}

type rowWalker struct {
	b    *builder
	rows []Row
}

// object writes the rows of s's properties at depth; path holds the
// schemas being expanded above (the recursion guard).
func (w *rowWalker) object(s *openapi3.SchemaRef, depth int, path []*openapi3.Schema) {
	if s == nil || s.Value == nil {
		return
	}
	v := s.Value
	if slices.Contains(path, v) {
		return
	}
	path = append(path, v)
	if v.Type != nil && v.Type.Includes("array") && v.Items != nil {
		w.object(v.Items, depth, path)
		return
	}
	// Properties of allOf parts and of the schema itself, the later
	// definition of a property refining the earlier.
	props := map[string]*openapi3.SchemaRef{}
	required := map[string]bool{}
	var order []string
	var collect func(s *openapi3.SchemaRef, d int)
	collect = func(s *openapi3.SchemaRef, d int) {
		if s == nil || s.Value == nil || d > maxDepth {
			return
		}
		for _, part := range s.Value.AllOf {
			collect(part, d+1)
		}
		names := make([]string, 0, len(s.Value.Properties))
		for n := range s.Value.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if _, ok := props[n]; !ok {
				order = append(order, n)
			}
			props[n] = merge(props[n], s.Value.Properties[n])
		}
		for _, n := range s.Value.Required {
			required[n] = true
		}
	}
	collect(s, 0)
	for _, n := range order {
		w.property(n, props[n], required[n], depth, path)
	}
	variants := v.OneOf
	if len(variants) == 0 {
		variants = v.AnyOf
	}
	for i, sub := range variants {
		label := fmt.Sprintf("variant %d", i+1)
		w.property(label, sub, false, depth, path)
	}
}

// merge keeps a property's fuller definition: an allOf refinement such as
// `code: {enum: [...]}` keeps the type and description of the base.
func merge(base, refined *openapi3.SchemaRef) *openapi3.SchemaRef {
	if base == nil || base.Value == nil || refined == nil || refined.Value == nil {
		return refined
	}
	if refined.Value.Type == nil && len(refined.Value.Properties) == 0 && len(refined.Value.AllOf) == 0 && refined.Ref == "" {
		v := *base.Value
		if len(refined.Value.Enum) > 0 {
			v.Enum = refined.Value.Enum
		}
		if refined.Value.Description != "" {
			v.Description = refined.Value.Description
		}
		return &openapi3.SchemaRef{Ref: base.Ref, Value: &v}
	}
	if refined.Ref == "" && base.Ref == "" && len(refined.Value.Properties) > 0 && len(base.Value.Properties) > 0 {
		// Both inline objects: nest them as an allOf so both sets of
		// properties show.
		return &openapi3.SchemaRef{Value: &openapi3.Schema{Type: refined.Value.Type, AllOf: openapi3.SchemaRefs{base, refined}, Description: refined.Value.Description}}
	}
	return refined
}

func (w *rowWalker) property(name string, s *openapi3.SchemaRef, required bool, depth int, path []*openapi3.Schema) {
	if s == nil || s.Value == nil {
		return
	}
	v := s.Value
	row := Row{Name: name, Depth: depth, Type: typeName(s), Required: required, Enum: enumValues(v), Description: w.b.md(v.Description)}
	inner := s
	if v.Type != nil && v.Type.Includes("array") && v.Items != nil {
		inner = v.Items
		if len(row.Enum) == 0 && v.Items.Value != nil {
			row.Enum = enumValues(v.Items.Value)
		}
		if row.Description == "" && v.Items.Value != nil {
			row.Description = w.b.md(v.Items.Value.Description)
		}
	}
	nested := inner.Value != nil && (len(inner.Value.Properties) > 0 || len(inner.Value.AllOf) > 0 || len(inner.Value.OneOf) > 0 || len(inner.Value.AnyOf) > 0)
	switch {
	case nested && inner.Value != nil && slices.Contains(path, inner.Value):
		row.Note = "recursive: " + orDefault(refName(inner), "see above")
		nested = false
	case nested && depth+1 >= maxDepth:
		row.Note = "nesting continues: " + orDefault(refName(inner), "not shown")
		nested = false
	}
	w.rows = append(w.rows, row)
	if nested {
		w.object(inner, depth+1, path)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
