package readapi_test

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/readapi"
)

func TestParseSubscriptionWindow(t *testing.T) {
	now := time.Date(2026, 11, 28, 3, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, c := range []struct {
		query, from, to, field string
	}{
		{query: "", from: "2026-10-30", to: "2026-11-28"}, // 30 days ending today (UTC)
		{query: "filter[date_from]=2026-11-01", from: "2026-11-01", to: "2026-11-28"},
		{query: "filter[date_to]=2026-03-31", from: "2026-03-02", to: "2026-03-31"},
		{query: "filter[date_from]=2026-03-01&filter[date_to]=2026-03-01", from: "2026-03-01", to: "2026-03-01"},
		{query: "filter[date_from]=2026-03-02&filter[date_to]=2026-03-01", field: "filter[date_to]"},
		{query: "filter[date_from]=2026-12-01", field: "filter[date_from]"},
		{query: "filter[date_from]=2026-02-30", field: "filter[date_from]"},
		{query: "filter[date_to]=tomorrow", field: "filter[date_to]"},
		{query: "filter[date_to]=2026-03-01&filter[date_to]=2026-03-02", field: "filter[date_to]"},
		{query: "sort=-date", field: "sort"},
	} {
		q, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		w, err := readapi.ParseSubscriptionWindow(q, now)
		if c.field != "" {
			var he *httpapi.Error
			if !errors.As(err, &he) || he.Code != httpapi.CodeInvalidParameter || he.Details["field"] != c.field {
				t.Errorf("%q: %v, want invalid_parameter naming %s", c.query, err, c.field)
			}
			continue
		}
		if err != nil || w.DateFrom != c.from || w.DateTo != c.to || w.From.Format(time.DateOnly) != c.from {
			t.Errorf("%q: %+v %v, want %s..%s", c.query, w, err, c.from, c.to)
		}
		if end, _ := time.Parse(time.DateOnly, c.to); err == nil && !w.Before.Equal(end.AddDate(0, 0, 1)) {
			t.Errorf("%q: before %v, want the day after %s", c.query, w.Before, c.to)
		}
	}
}
