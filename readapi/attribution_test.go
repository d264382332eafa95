package readapi_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/readapi"
)

// FuzzParseAttributionSummary: any query string is either a valid summary
// request (a known model and group, ordered dates) or a 400
// invalid_parameter; never a panic or another error.
func FuzzParseAttributionSummary(f *testing.F) {
	for _, s := range []string{"filter[model]=linear", "filter[model]=linear&group_by=campaign&filter[date_from]=2026-03-01&filter[date_to]=2026-03-02",
		"filter[model]=x", "group_by=source", "filter[date_to]=2026-02-30&filter[model]=first_touch", "filter[model]=linear&filter[model]=linear", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		query, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := readapi.ParseAttributionSummary(query)
		if err != nil {
			var he *httpapi.Error
			if !errors.As(err, &he) || he.Code != httpapi.CodeInvalidParameter || he.Status != 400 {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		if q.Model == "" || q.GroupBy == "" || (!q.From.IsZero() && !q.Before.IsZero() && !q.Before.After(q.From)) {
			t.Fatalf("%q: accepted %+v", raw, q)
		}
	})
}
