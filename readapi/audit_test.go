package readapi

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/httpapi"
)

// FuzzAuditQuery: any query string of the audit list or of an as-of read
// is either accepted, with a time range that is in order and in UTC, or
// refused with a 400 naming a parameter; never a panic or another error.
func FuzzAuditQuery(f *testing.F) {
	for _, q := range []string{
		"filter[recorded_at][gte]=2026-10-01T00:00:00Z&filter[recorded_at][lt]=2026-10-02",
		"filter[recorded_at][gte]=2026-10-01T00:00:00.5%2B02:00", "filter[recorded_at][lt]=yesterday",
		"filter[stream]=customer-cus_1&filter[actor]=tok_1&sort=-position&limit=100", "filter[type]=&limit=0",
		"as_of=2026-10-01T00:00:00Z", "as_of=2026-02-30", "as_of=9999-12-31T23:59:59Z&as_of=1", "%zz",
	} {
		f.Add(q)
	}
	codec, err := httpapi.NewCursorCodec(make([]byte, 32))
	if err != nil {
		f.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest("GET", "/api/v1/audit-events", nil)
		r.URL.RawQuery = query
		refused := func(err error) {
			var he *httpapi.Error
			if !errors.As(err, &he) || he.Status != 400 {
				t.Fatalf("%q: %v", query, err)
			}
		}
		if params, err := httpapi.ParseList(r, AuditListSpec, codec); err != nil {
			refused(err)
		} else if q, err := AuditQuery("shop_1", params); err != nil {
			refused(err)
		} else {
			if !q.RecordedFrom.IsZero() && !q.RecordedBefore.IsZero() && !q.RecordedBefore.After(q.RecordedFrom) {
				t.Fatalf("%q: range %v..%v", query, q.RecordedFrom, q.RecordedBefore)
			}
			for _, tm := range []time.Time{q.RecordedFrom, q.RecordedBefore} {
				if !tm.IsZero() && tm.Location() != time.UTC {
					t.Fatalf("%q: %v not UTC", query, tm)
				}
			}
		}
		at, ok, err := ParseAsOf(r, now)
		switch {
		case err != nil:
			refused(err)
		case ok && (at.After(now) || at.Location() != time.UTC):
			t.Fatalf("%q: as_of %v accepted", query, at)
		}
	})
}
