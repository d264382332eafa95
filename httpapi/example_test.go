package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/httpapi"
)

// Example shows a list handler and a PATCH handler on top of the skeleton:
// parse the query against the allow-list, resume after the cursor, answer
// with the list envelope; decode the body, let errors map themselves.
func Example() {
	codec, _ := httpapi.NewCursorCodec(bytes.Repeat([]byte{1}, 32))
	spec := httpapi.ListSpec{
		Resource:    "customers",
		Filters:     map[string]httpapi.FilterKind{"lifecycle_stage": httpapi.EnumFilter("new", "loyal")},
		Sorts:       []string{"created_at", "total_spent"},
		DefaultSort: "-created_at",
	}
	rows := []string{"cus_A", "cus_B", "cus_C"} // stands in for a read model

	router := httpapi.NewRouter()
	httpapi.HandleFunc(router, httpapi.Stable, http.MethodGet, "/api/v1/customers", func(w http.ResponseWriter, r *http.Request) {
		p, err := httpapi.ParseList(r, spec, codec)
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		var after struct {
			Index int `json:"n"`
		}
		if p.Cursor != nil {
			if err := p.Cursor.Decode(&after); err != nil {
				httpapi.WriteError(w, r, err)
				return
			}
		}
		end := min(after.Index+p.Limit, len(rows))
		var items []httpapi.Resource
		for _, id := range rows[after.Index:end] {
			items = append(items, httpapi.Resource{ID: id, Type: "customer"})
		}
		var page httpapi.Page
		if end < len(rows) {
			if page.NextCursor, err = p.NextCursor(struct {
				Index int `json:"n"`
			}{end}); err != nil {
				httpapi.WriteError(w, r, err)
				return
			}
		}
		httpapi.WriteList(w, r, items, page)
	})
	httpapi.HandleFunc(router, httpapi.Stable, http.MethodPatch, "/api/v1/customers/{customer_id}", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Tags []string `json:"tags"`
		}
		if err := httpapi.DecodeData(w, r, 64<<10, &in); err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		httpapi.WriteResource(w, r, http.StatusOK, httpapi.Resource{ID: "cus_A", Type: "customer", Attributes: in})
	})

	stack, _ := httpapi.NewStack(httpapi.StackConfig{Logger: zerolog.Nop(), Registry: prometheus.NewRegistry()})
	srv := httptest.NewServer(stack.Wrap(router))
	defer srv.Close()

	show := func(method, path, body string) {
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewBufferString(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, resp.Header.Get("X-Service-Stability"), len(b) > 0)
	}
	show(http.MethodGet, "/api/v1/customers?limit=2&filter[lifecycle_stage]=loyal", "")
	show(http.MethodGet, "/api/v1/customers?sort=email", "")
	show(http.MethodPatch, "/api/v1/customers/cus_A", `{"data":{"attributes":{"tags":["vip"]}}}`)
	show(http.MethodPatch, "/api/v1/customers/cus_A", `{"data":{"attributes":{"tags":"vip"}}}`)
	// Output:
	// 200 stable true
	// 400 stable true
	// 200 stable true
	// 422 stable true
}
