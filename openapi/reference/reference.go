package reference

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Reference is the API reference built from one OpenAPI document: every
// operation grouped by its first tag, in the order of the document's tags.
// It is immutable once built and safe for concurrent use.
type Reference struct {
	Title       string
	Version     string
	Summary     string
	Description template.HTML
	Sections    []Section
	// Total counts the operations.
	Total int
}

// Section is one tag of the document and its operations.
type Section struct {
	Name        string
	Anchor      string
	Description template.HTML
	Operations  []Operation
}

// Operation is one method on one path.
type Operation struct {
	Method      string
	Path        string
	ID          string
	Tag         string
	Summary     string
	Description template.HTML
	Stability   string
	Scope       string
	Security    []string
	Deprecated  bool
	Parameters  []Parameter
	Body        *Body
	Responses   []Response
	// Search is the lowercase text the search matches: method, path,
	// operationId, summary and tags.
	Search string
	// HTML is the operation's article in the page, rendered once by Build
	// so a filtered page only assembles the matching ones.
	HTML template.HTML
}

// Parameter is one parameter of an operation (path-level ones included).
type Parameter struct {
	Name        string
	In          string
	Required    bool
	Deprecated  bool
	Type        string
	Enum        []string
	Description template.HTML
	Example     string
}

// Body is an operation's request body.
type Body struct {
	Required    bool
	Description template.HTML
	Contents    []Content
}

// Content is one media type of a body or a response.
type Content struct {
	MediaType string
	// Type summarises the schema: its type and the name of the component
	// it refers to.
	Type     string
	Rows     []Row
	Examples []Example
	// Open shows the schema table unfolded (request bodies).
	Open bool
}

// Example is one example value, as indented JSON (or text).
type Example struct {
	Name  string
	Value string
}

// Response is one response of an operation.
type Response struct {
	Status      string
	Description template.HTML
	Headers     []Parameter
	Contents    []Content
	// Codes are the error codes (error.code) the response can carry.
	Codes []string
}

// Row is one property of a schema, flattened: Depth says how deep it is
// nested.
type Row struct {
	Name        string
	Depth       int
	Type        string
	Required    bool
	Enum        []string
	Description template.HTML
	// Note says why the nesting stops here (a recursive reference, the
	// depth limit).
	Note string
}

// maxDepth bounds the nesting of a schema table; recursion through
// references stops earlier, at the first repetition.
const maxDepth = 8

// maxExample bounds the size of one rendered example.
const maxExample = 8 << 10

var methodOrder = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE"}

// builder renders the descriptions of one document, each distinct text
// once: shared headers and responses repeat theirs across operations.
type builder struct {
	markdown map[string]template.HTML
}

func (b *builder) md(src string) template.HTML {
	if h, ok := b.markdown[src]; ok {
		return h
	}
	h := renderMarkdown(src)
	b.markdown[src] = h
	return h
}

// Build builds the reference of doc, which must be loaded (references
// resolved) by openapi3.Loader.
func Build(doc *openapi3.T) (*Reference, error) {
	b := &builder{markdown: map[string]template.HTML{}}
	if doc == nil || doc.Info == nil || doc.Paths == nil {
		return nil, fmt.Errorf("build reference: the document has no info or paths")
	}
	ref := &Reference{
		Title:       doc.Info.Title,
		Version:     doc.Info.Version,
		Summary:     doc.Info.Summary,
		Description: b.md(doc.Info.Description),
	}
	index := map[string]int{}
	addSection := func(name, description string) int {
		if i, ok := index[name]; ok {
			return i
		}
		index[name] = len(ref.Sections)
		ref.Sections = append(ref.Sections, Section{Name: name, Anchor: "tag-" + anchor(name), Description: b.md(description)})
		return index[name]
	}
	for _, tag := range doc.Tags {
		if tag != nil {
			addSection(tag.Name, tag.Description)
		}
	}
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, path := range paths {
		item := doc.Paths.Value(path)
		ops := item.Operations()
		methods := make([]string, 0, len(ops))
		for m := range ops {
			methods = append(methods, strings.ToUpper(m))
		}
		slices.SortFunc(methods, func(a, b string) int { return slices.Index(methodOrder, a) - slices.Index(methodOrder, b) })
		for _, method := range methods {
			op := b.operation(doc, path, method, item, ops[method])
			var buf bytes.Buffer
			if err := templates.ExecuteTemplate(&buf, "op", op); err != nil {
				return nil, fmt.Errorf("render %s %s: %w", method, path, err)
			}
			op.HTML = template.HTML(buf.String()) //nolint:gosec // html/template's own output
			i := addSection(op.Tag, "")
			ref.Sections[i].Operations = append(ref.Sections[i].Operations, op)
			ref.Total++
		}
	}
	ref.Sections = slices.DeleteFunc(ref.Sections, func(s Section) bool { return len(s.Operations) == 0 })
	return ref, nil
}

func (b *builder) operation(doc *openapi3.T, path, method string, item *openapi3.PathItem, op *openapi3.Operation) Operation {
	o := Operation{
		Method:      method,
		Path:        path,
		ID:          op.OperationID,
		Tag:         "other",
		Summary:     op.Summary,
		Description: b.md(op.Description),
		Deprecated:  op.Deprecated,
	}
	if o.ID == "" {
		o.ID = strings.ToLower(method) + anchor(path)
	}
	if len(op.Tags) > 0 {
		o.Tag = op.Tags[0]
	}
	o.Stability, _ = op.Extensions["x-service-stability"].(string)
	o.Scope, _ = op.Extensions["x-required-scope"].(string)
	security := doc.Security
	if op.Security != nil {
		security = *op.Security
	}
	if len(security) == 0 {
		o.Security = []string{"none"}
	}
	for _, req := range security {
		if len(req) == 0 {
			o.Security = append(o.Security, "none")
			continue
		}
		names := make([]string, 0, len(req))
		for scheme, scopes := range req {
			s := scheme
			if len(scopes) > 0 {
				s += " (" + strings.Join(scopes, ", ") + ")"
			}
			names = append(names, s)
		}
		sort.Strings(names)
		o.Security = append(o.Security, strings.Join(names, " and "))
	}
	o.Parameters = b.parameters(item.Parameters, op.Parameters)
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		rb := op.RequestBody.Value
		o.Body = &Body{Required: rb.Required, Description: b.md(rb.Description), Contents: b.contents(rb.Content, true, true)}
	}
	if op.Responses != nil {
		statuses := make([]string, 0, op.Responses.Len())
		for status := range op.Responses.Map() {
			statuses = append(statuses, status)
		}
		sort.Strings(statuses)
		for _, status := range statuses {
			r := op.Responses.Value(status)
			if r == nil || r.Value == nil {
				continue
			}
			o.Responses = append(o.Responses, b.response(status, r.Value))
		}
	}
	o.Search = strings.ToLower(strings.Join(append([]string{method, path, o.ID, o.Summary, o.Scope}, op.Tags...), " "))
	return o
}

// parameters merges the path item's parameters with the operation's, the
// operation's winning on the same name and location.
func (b *builder) parameters(lists ...openapi3.Parameters) []Parameter {
	var out []Parameter
	seen := map[string]int{}
	for _, list := range lists {
		for _, pr := range list {
			if pr == nil || pr.Value == nil {
				continue
			}
			p := pr.Value
			param := Parameter{
				Name:        p.Name,
				In:          p.In,
				Required:    p.Required,
				Deprecated:  p.Deprecated,
				Description: b.md(p.Description),
			}
			if p.Schema != nil {
				param.Type = typeName(p.Schema)
				param.Enum = enumValues(p.Schema.Value)
			}
			if p.Example != nil {
				param.Example = exampleText(p.Example)
			}
			key := p.In + "\x00" + p.Name
			if i, ok := seen[key]; ok {
				out[i] = param
				continue
			}
			seen[key] = len(out)
			out = append(out, param)
		}
	}
	return out
}

func (b *builder) response(status string, r *openapi3.Response) Response {
	resp := Response{Status: status}
	if r.Description != nil {
		resp.Description = b.md(*r.Description)
	}
	names := make([]string, 0, len(r.Headers))
	for name := range r.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		h := r.Headers[name]
		if h == nil || h.Value == nil {
			continue
		}
		p := Parameter{Name: name, In: "header", Required: h.Value.Required, Description: b.md(h.Value.Description)}
		if h.Value.Schema != nil {
			p.Type = typeName(h.Value.Schema)
		}
		resp.Headers = append(resp.Headers, p)
	}
	// Tables for the successful answers; errors share one envelope, so
	// their code is what tells them apart.
	success := strings.HasPrefix(status, "2")
	resp.Contents = b.contents(r.Content, success, false)
	codes := map[string]bool{}
	for _, mt := range r.Content {
		if mt == nil {
			continue
		}
		if mt.Schema != nil {
			errorCodes(mt.Schema, codes, 0)
		}
		for _, ex := range examples(mt) {
			if m, ok := ex.(map[string]any); ok {
				if e, ok := m["error"].(map[string]any); ok {
					if c, ok := e["code"].(string); ok {
						codes[c] = true
					}
				}
			}
		}
	}
	for c := range codes {
		resp.Codes = append(resp.Codes, c)
	}
	sort.Strings(resp.Codes)
	return resp
}

func (b *builder) contents(content openapi3.Content, tables, open bool) []Content {
	types := make([]string, 0, len(content))
	for mt := range content {
		types = append(types, mt)
	}
	sort.Strings(types)
	var out []Content
	for _, name := range types {
		mt := content[name]
		if mt == nil {
			continue
		}
		c := Content{MediaType: name, Open: tables && open}
		if mt.Schema != nil {
			c.Type = typeName(mt.Schema)
			if tables {
				c.Rows = b.schemaRows(mt.Schema)
			}
		}
		exNames := make([]string, 0, len(mt.Examples))
		for n := range mt.Examples {
			exNames = append(exNames, n)
		}
		sort.Strings(exNames)
		if mt.Example != nil {
			c.Examples = append(c.Examples, Example{Value: exampleText(mt.Example)})
		}
		for _, n := range exNames {
			if e := mt.Examples[n]; e != nil && e.Value != nil && e.Value.Value != nil {
				c.Examples = append(c.Examples, Example{Name: n, Value: exampleText(e.Value.Value)})
			}
		}
		out = append(out, c)
	}
	return out
}

// examples are a media type's example values.
func examples(mt *openapi3.MediaType) []any {
	var out []any
	if mt.Example != nil {
		out = append(out, mt.Example)
	}
	for _, e := range mt.Examples {
		if e != nil && e.Value != nil && e.Value.Value != nil {
			out = append(out, e.Value.Value)
		}
	}
	return out
}

// errorCodes collects the enum of error.code through allOf, oneOf and
// anyOf.
func errorCodes(s *openapi3.SchemaRef, into map[string]bool, depth int) {
	if s == nil || s.Value == nil || depth > maxDepth {
		return
	}
	v := s.Value
	for _, list := range []openapi3.SchemaRefs{v.AllOf, v.OneOf, v.AnyOf} {
		for _, sub := range list {
			errorCodes(sub, into, depth+1)
		}
	}
	e := v.Properties["error"]
	if e == nil || e.Value == nil {
		return
	}
	var walk func(s *openapi3.SchemaRef, d int)
	walk = func(s *openapi3.SchemaRef, d int) {
		if s == nil || s.Value == nil || d > maxDepth {
			return
		}
		if c := s.Value.Properties["code"]; c != nil && c.Value != nil {
			for _, v := range enumValues(c.Value) {
				into[v] = true
			}
		}
		for _, list := range []openapi3.SchemaRefs{s.Value.AllOf, s.Value.OneOf, s.Value.AnyOf} {
			for _, sub := range list {
				walk(sub, d+1)
			}
		}
	}
	walk(e, depth+1)
}

func exampleText(v any) string {
	var text string
	if s, ok := v.(string); ok {
		text = s
	} else {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			text = fmt.Sprint(v)
		} else {
			text = string(b)
		}
	}
	if len(text) > maxExample {
		text = text[:maxExample] + "\n…"
	}
	return text
}

// anchor turns a name into the characters an id may hold safely.
func anchor(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

// Filter returns the sections with only the operations matching q: every
// word of q appears in the operation's method, path, operationId, summary,
// scope or tags (case-insensitive). An empty q matches every operation.
func (r *Reference) Filter(q string) (sections []Section, matched int) {
	words := strings.Fields(strings.ToLower(q))
	if len(words) == 0 {
		return r.Sections, r.Total
	}
	for _, s := range r.Sections {
		var ops []Operation
		for _, op := range s.Operations {
			if matches(op.Search, words) {
				ops = append(ops, op)
			}
		}
		if len(ops) > 0 {
			s.Operations = ops
			sections = append(sections, s)
			matched += len(ops)
		}
	}
	return sections, matched
}

func matches(text string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}
