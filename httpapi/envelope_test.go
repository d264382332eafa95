package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/httpapi"
)

type customerAttrs struct {
	Email *string  `json:"email"`
	Tags  []string `json:"tags"`
}

func TestWriteResourceShape(t *testing.T) {
	email := "a@b.example"
	e := newEnv(t, func(r *mux.Router) {
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodGet, "/c", func(w http.ResponseWriter, req *http.Request) {
			httpapi.WriteResource(w, req, http.StatusOK, httpapi.Resource{
				ID: "cus_1", Type: "customer",
				Attributes:    customerAttrs{Email: &email, Tags: []string{"vip"}},
				Relationships: map[string]httpapi.Relationship{"orders": httpapi.RelatedLink("/api/v1/customers/cus_1/orders")},
			})
		})
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodPost, "/empty", func(w http.ResponseWriter, req *http.Request) {
			httpapi.WriteResource(w, req, http.StatusCreated, httpapi.Resource{ID: "x_1", Type: "thing",
				Meta: map[string]any{"position": 42}})
		})
	})
	r := e.do(t, http.MethodGet, "/c", "")
	want := `{"data":{"id":"cus_1","type":"customer","attributes":{"email":"a@b.example","tags":["vip"]},"relationships":{"orders":{"links":{"related":"/api/v1/customers/cus_1/orders"}}}}}`
	if r.status != 200 || string(r.body) != want {
		t.Errorf("got %d %s\nwant %s", r.status, r.body, want)
	}
	if r.header.Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type = %q", r.header.Get("Content-Type"))
	}
	r = e.do(t, http.MethodPost, "/empty", "")
	want = `{"data":{"id":"x_1","type":"thing","attributes":{},"meta":{"position":42}}}`
	if r.status != 201 || string(r.body) != want {
		t.Errorf("got %d %s\nwant %s", r.status, r.body, want)
	}
}

func TestWriteListShapeAndNextLink(t *testing.T) {
	e := newEnv(t, func(r *mux.Router) {
		httpapi.HandleFunc(r, httpapi.Stable, http.MethodGet, "/api/v1/customers", func(w http.ResponseWriter, req *http.Request) {
			if req.URL.Query().Get("empty") != "" {
				httpapi.WriteList(w, req, nil, httpapi.Page{})
				return
			}
			httpapi.WriteList(w, req, []httpapi.Resource{{ID: "cus_1", Type: "customer"}, {ID: "cus_2", Type: "customer"}},
				httpapi.Page{NextCursor: "NEXT_c-1"}) // HasNext implied
		})
	})
	r := e.do(t, http.MethodGet, "/api/v1/customers?empty=1", "")
	if want := `{"data":[],"pagination":{"next_cursor":null,"has_next":false},"links":{"next":null}}`; string(r.body) != want {
		t.Errorf("empty list %s\nwant %s", r.body, want)
	}

	r = e.do(t, http.MethodGet, "/api/v1/customers?limit=2&filter%5Blifecycle_stage%5D=loyal&cursor=OLD", "")
	var doc struct {
		Data       []httpapi.Resource `json:"data"`
		Pagination struct {
			NextCursor *string `json:"next_cursor"`
			HasNext    bool    `json:"has_next"`
		} `json:"pagination"`
		Links struct {
			Next *string `json:"next"`
		} `json:"links"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Data) != 2 || doc.Data[1].ID != "cus_2" || !doc.Pagination.HasNext ||
		doc.Pagination.NextCursor == nil || *doc.Pagination.NextCursor != "NEXT_c-1" || doc.Links.Next == nil {
		t.Fatalf("list = %s", r.body)
	}
	next, err := url.Parse(*doc.Links.Next)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(e.srv.URL)
	q := next.Query()
	if next.Scheme != "http" || next.Host != base.Host || next.Path != "/api/v1/customers" ||
		q.Get("cursor") != "NEXT_c-1" || q.Get("limit") != "2" || q.Get("filter[lifecycle_stage]") != "loyal" || len(q) != 3 {
		t.Errorf("links.next = %s", *doc.Links.Next)
	}
}
