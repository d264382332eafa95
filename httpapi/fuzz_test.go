package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// The seed corpora live in testdata/fuzz/<FuzzName>; `go test` runs them as
// ordinary tests, `go test -fuzz=FuzzCursorDecode ./httpapi` explores.

func FuzzCursorDecode(f *testing.F) {
	codec := mustCodec(f, testKey(9))
	good, err := codec.Encode(customersQuery, position{CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ID: "cus_1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Fuzz(func(t *testing.T, cursor string) {
		var p position
		err := codec.Decode(cursor, customersQuery, &p)
		if err != nil {
			var he *httpapi.Error
			if !errors.As(err, &he) || he.Status != 400 || he.Code != "invalid_cursor" {
				t.Fatalf("Decode(%q) = %v, want 400 invalid_cursor", cursor, err)
			}
			return
		}
		// Only a cursor we signed decodes; its position must survive a
		// round trip.
		again, err := codec.Encode(customersQuery, p)
		if err != nil {
			t.Fatal(err)
		}
		var q position
		if err := codec.Decode(again, customersQuery, &q); err != nil || !q.CreatedAt.Equal(p.CreatedAt) || q.ID != p.ID {
			t.Fatalf("round trip of %+v: %+v %v", p, q, err)
		}
	})
}

func FuzzParseList(f *testing.F) {
	codec := mustCodec(f, testKey(9))
	spec := customerList()
	first, err := httpapi.ParseList(httptest.NewRequest(http.MethodGet, "/x?filter[lifecycle_stage]=loyal", nil), spec, codec)
	if err != nil {
		f.Fatal(err)
	}
	next, err := first.NextCursor(position{ID: "cus_2"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("filter[lifecycle_stage]=loyal&cursor=" + next)
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/customers", nil)
		r.URL.RawQuery = query
		p, err := httpapi.ParseList(r, spec, codec)
		if err != nil {
			var he *httpapi.Error
			if !errors.As(err, &he) || he.Status != 400 || (he.Code != "invalid_parameter" && he.Code != "invalid_cursor") {
				t.Fatalf("ParseList(%q) = %v, want a 400", query, err)
			}
			if _, ok := he.Details["field"].(string); !ok {
				t.Fatalf("ParseList(%q): no details.field in %v", query, he.Details)
			}
			return
		}
		if p.Limit < 1 || p.Limit > httpapi.MaxLimit {
			t.Fatalf("limit %d accepted", p.Limit)
		}
		if !slices.Contains(spec.Sorts, p.Sort.Field) {
			t.Fatalf("sort %q accepted", p.Sort)
		}
		for name := range p.Filters {
			if _, ok := spec.Filters[name]; !ok {
				t.Fatalf("filter %q accepted", name)
			}
		}
		for _, inc := range p.Include {
			if !slices.Contains(spec.Includes, inc) {
				t.Fatalf("include %q accepted", inc)
			}
		}
		if p.Cursor != nil && p.Filters["lifecycle_stage"] != "loyal" {
			t.Fatalf("a cursor was accepted for another query: %q", query)
		}
	})
}

func FuzzDecodeData(f *testing.F) {
	f.Add([]byte(`{"data":{"attributes":{"tags":["vip"]}}}`), "application/json")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		r := httptest.NewRequest(http.MethodPatch, "/c", bytes.NewReader(body))
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		var in patchAttrs
		err := httpapi.DecodeData(httptest.NewRecorder(), r, 1024, &in)
		if err == nil {
			if !json.Valid(body) || len(body) > 1024 {
				t.Fatalf("accepted %q", body)
			}
			return
		}
		var he *httpapi.Error
		var de *domain.Error
		switch {
		case errors.As(err, &he):
			switch he.Status {
			case 400, 413, 415, 422:
			default:
				t.Fatalf("status %d for %q", he.Status, body)
			}
			if he.Status == 422 {
				if _, ok := he.Details["field"].(string); !ok {
					t.Fatalf("422 without details.field for %q", body)
				}
			}
		case errors.As(err, &de) && de.Code == domain.CodeInvalid:
		default:
			t.Fatalf("DecodeData(%q) = %v: not a client error", body, err)
		}
	})
}
