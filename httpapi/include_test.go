package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/httpapi"
)

func TestParseInclude(t *testing.T) {
	allowed := []string{"customer", "audience"}
	for query, want := range map[string]string{
		"":                           "[]",
		"include=customer":           "[customer]",
		"include=customer,customer":  "[customer]",
		"include=audience,customer":  "[audience customer]",
		"other=1&include=audience":   "[audience]",
		"include=customer&limit=abc": "[customer]", // other keys are the handler's
	} {
		r := httptest.NewRequest(http.MethodGet, "/x?"+query, nil)
		got, err := httpapi.ParseInclude(r, allowed)
		if err != nil || strings.Join(got, " ") != strings.Trim(want, "[]") {
			t.Errorf("%q: %v %v, want %s", query, got, err, want)
		}
	}
	for _, query := range []string{"include=", "include=orders", "include=customer,", "include=customer&include=audience", "include=Customer"} {
		r := httptest.NewRequest(http.MethodGet, "/x?"+query, nil)
		_, err := httpapi.ParseInclude(r, allowed)
		var he *httpapi.Error
		if !errors.As(err, &he) || he.Status != 400 || he.Code != "invalid_parameter" || he.Details["field"] != "include" {
			t.Errorf("%q: %v, want 400 invalid_parameter naming include", query, err)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/x?include=customer", nil)
	if _, err := httpapi.ParseInclude(r, nil); err == nil {
		t.Error("an include on a resource without relations was accepted")
	}
}

func TestCompoundDocuments(t *testing.T) {
	rel := httpapi.RelatedLink("/api/v1/customers/cus_1")
	rel.Data = httpapi.ResourceID{Type: "customer", ID: "cus_1"}
	order := httpapi.Resource{ID: "ord_1", Type: "order", Relationships: map[string]httpapi.Relationship{"customer": rel}}
	customer := httpapi.Resource{ID: "cus_1", Type: "customer"}

	for name, c := range map[string]struct {
		write func(w http.ResponseWriter, r *http.Request)
		want  string
	}{
		"single with included": {func(w http.ResponseWriter, r *http.Request) {
			httpapi.WriteCompound(w, r, 200, order, []httpapi.Resource{customer})
		}, `"included":[{"id":"cus_1","type":"customer","attributes":{}}]`},
		"single, nothing found": {func(w http.ResponseWriter, r *http.Request) {
			httpapi.WriteCompound(w, r, 200, order, []httpapi.Resource{})
		}, `"included":[]`},
		"list with included": {func(w http.ResponseWriter, r *http.Request) {
			httpapi.WriteList(w, r, []httpapi.Resource{order}, httpapi.Page{Included: []httpapi.Resource{customer}})
		}, `"included":[{"id":"cus_1","type":"customer","attributes":{}}]`},
	} {
		rec := httptest.NewRecorder()
		c.write(rec, httptest.NewRequest(http.MethodGet, "/api/v1/orders", nil))
		body := rec.Body.String()
		if !strings.Contains(body, c.want) || !strings.Contains(body, `"data":{"type":"customer","id":"cus_1"}`) {
			t.Errorf("%s: %s", name, body)
		}
	}
	// Without include: no included member, no relationship data.
	rec := httptest.NewRecorder()
	httpapi.WriteList(rec, httptest.NewRequest(http.MethodGet, "/x", nil), []httpapi.Resource{customer}, httpapi.Page{})
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["included"]; ok {
		t.Errorf("included without include: %s", rec.Body)
	}
}

func FuzzParseInclude(f *testing.F) {
	f.Add("include=customer,audience")
	f.Add("include=customer&include=x")
	allowed := []string{"customer", "audience"}
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest(http.MethodGet, "/x", nil)
		r.URL.RawQuery = query
		got, err := httpapi.ParseInclude(r, allowed)
		if err != nil {
			var he *httpapi.Error
			if !errors.As(err, &he) || he.Status != 400 || he.Details["field"] != "include" {
				t.Fatalf("ParseInclude(%q) = %v, want a 400 naming include", query, err)
			}
			return
		}
		for i, v := range got {
			if !slices.Contains(allowed, v) || slices.Contains(got[:i], v) {
				t.Fatalf("ParseInclude(%q) = %v", query, got)
			}
		}
	})
}
