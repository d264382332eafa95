package httpapi

import (
	"net/http"
	"net/url"
)

// Resource is one resource object of the JSON:API-like envelopes.
type Resource struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Attributes is any JSON-encodable value, usually a struct with json
	// tags. Nil is sent as an empty object.
	Attributes any `json:"attributes"`
	// Relationships maps a relation name to its link, e.g. "orders" →
	// /api/v1/customers/cus_…/orders.
	Relationships map[string]Relationship `json:"relationships,omitempty"`
	// Meta is optional resource-level information, e.g. the log position a
	// write reached.
	Meta map[string]any `json:"meta,omitempty"`
}

// Relationship is a related resource reachable by a link.
type Relationship struct {
	Links Links `json:"links"`
	// Data identifies the related resources when the request included
	// them (see Document.Included): a ResourceID for a to-one relation, a
	// []ResourceID for a to-many one; absent otherwise.
	Data any `json:"data,omitempty"`
}

// ResourceID identifies a resource in a relationship's data.
type ResourceID struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Links of a relationship.
type Links struct {
	// Related is the path of the related resource or collection.
	Related string `json:"related"`
}

// RelatedLink is shorthand for a relationship that only has a related link.
func RelatedLink(path string) Relationship { return Relationship{Links: Links{Related: path}} }

// Read-your-writes headers: a write answers with HeaderEventPosition, the
// global log position its events reached; a GET that sends
// HeaderWaitForPosition waits (bounded) until the read models it reads have
// reached that position.
const (
	HeaderEventPosition   = "X-Event-Position"
	HeaderWaitForPosition = "X-Wait-For-Position"
)

// Page describes where a list response stops.
type Page struct {
	// NextCursor resumes the list after the last item; "" when there is no
	// next page.
	NextCursor string
	// HasNext reports whether more items follow; a NextCursor implies it.
	HasNext bool
	// Meta is optional top-level information about the list.
	Meta map[string]any
	// Included are the related resources the request asked for with
	// `include`, each once; sent as the top-level `included` when not nil.
	Included []Resource
}

type singleDocument struct {
	Data     Resource    `json:"data"`
	Included *[]Resource `json:"included,omitempty"`
}

type listDocument struct {
	Data       []Resource     `json:"data"`
	Included   *[]Resource    `json:"included,omitempty"`
	Pagination pagination     `json:"pagination"`
	Links      listLinks      `json:"links"`
	Meta       map[string]any `json:"meta,omitempty"`
}

type pagination struct {
	NextCursor *string `json:"next_cursor"`
	HasNext    bool    `json:"has_next"`
}

type listLinks struct {
	Next *string `json:"next"`
}

// WriteResource answers status with {"data":{id,type,attributes,relationships}}.
func WriteResource(w http.ResponseWriter, r *http.Request, status int, res Resource) {
	WriteCompound(w, r, status, res, nil)
}

// WriteCompound is WriteResource with the related resources the request
// included, sent as the top-level `included` array when not nil.
func WriteCompound(w http.ResponseWriter, r *http.Request, status int, res Resource, inc []Resource) {
	doc := singleDocument{Data: normalize(res), Included: includedMember(inc)}
	writeJSON(w, r, status, doc)
}

// WriteList answers 200 with
// {"data":[…],"pagination":{"next_cursor","has_next"},"links":{"next"}}:
// next_cursor and links.next are null on the last page; links.next is the
// full URL of the next page (the request's URL with the cursor replaced).
func WriteList(w http.ResponseWriter, r *http.Request, items []Resource, page Page) {
	doc := listDocument{Data: normalizeAll(items), Included: includedMember(page.Included), Meta: page.Meta}
	if doc.Data == nil {
		doc.Data = []Resource{}
	}
	doc.Pagination.HasNext = page.HasNext || page.NextCursor != ""
	if page.NextCursor != "" {
		c := page.NextCursor
		next := nextURL(r, c)
		doc.Pagination.NextCursor = &c
		doc.Links.Next = &next
	}
	writeJSON(w, r, http.StatusOK, doc)
}

// normalizeAll normalizes every resource (nil for nil).
func normalizeAll(items []Resource) []Resource {
	if items == nil {
		return nil
	}
	out := make([]Resource, len(items))
	for i, it := range items {
		out[i] = normalize(it)
	}
	return out
}

// included is the `included` member: absent when nothing was asked for,
// an array (maybe empty) when it was.
func includedMember(items []Resource) *[]Resource {
	if items == nil {
		return nil
	}
	out := normalizeAll(items)
	return &out
}

func normalize(res Resource) Resource {
	if res.Attributes == nil {
		res.Attributes = struct{}{}
	}
	return res
}

// nextURL is the absolute URL of the request with cursor set. Scheme and host
// come from the request, which trusted proxy headers may have rewritten.
func nextURL(r *http.Request, cursor string) string {
	q := r.URL.Query()
	q.Set("cursor", cursor)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if r.URL.Scheme != "" {
		scheme = r.URL.Scheme
	}
	u := url.URL{Scheme: scheme, Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: q.Encode()}
	return u.String()
}

type optionalDocument struct {
	Data *Resource      `json:"data"`
	Meta map[string]any `json:"meta"`
}

// WriteOptional answers status with {"data":…,"meta":{…}} for a resource
// that may be withheld: data is null when res is nil, and the top-level
// meta says which (a feature's state and why it is off).
func WriteOptional(w http.ResponseWriter, r *http.Request, status int, res *Resource, meta map[string]any) {
	doc := optionalDocument{Meta: meta}
	if res != nil {
		n := normalize(*res)
		doc.Data = &n
	}
	if doc.Meta == nil {
		doc.Meta = map[string]any{}
	}
	writeJSON(w, r, status, doc)
}
