package readapi_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/readapi"
)

var usageNow = time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)

func TestParseUsagePeriod(t *testing.T) {
	for v, want := range map[string]string{
		"2026-11": "2026-11", "2026-10": "2026-10", "2000-01": "2000-01", "2025-12": "2025-12",
		"2026-12": "", "2027-01": "", "1999-12": "", "2026-00": "", "2026-13": "", "2026-1": "", "2026/11": "",
		"26-11": "", "2026-11-01": "", "": "", "２026-11": "", "+026-11": "", "2026-1a": "",
	} {
		p, err := readapi.ParseUsagePeriod(v, usageNow)
		var he *httpapi.Error
		switch {
		case want != "" && (err != nil || p.String() != want):
			t.Errorf("%q: %v %v, want %s", v, p, err, want)
		case want == "" && (!errors.As(err, &he) || he.Status != 400 || he.Details["field"] != "filter[period]"):
			t.Errorf("%q: %v %v, want a 400 on filter[period]", v, p, err)
		}
	}
}

// FuzzParseUsagePeriod: any value is either a 400 naming filter[period] or
// a month from 2000-01 to now whose string form is the value itself.
func FuzzParseUsagePeriod(f *testing.F) {
	for _, s := range []string{"2026-11", "2026-13", "0000-00", "9999-99", "2026-1", "\xff\xff\xff\xff-\xff\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p, err := readapi.ParseUsagePeriod(v, usageNow)
		if err != nil {
			var he *httpapi.Error
			if !errors.As(err, &he) || he.Status != 400 || he.Code != httpapi.CodeInvalidParameter || he.Details["field"] != "filter[period]" {
				t.Fatalf("%q: %v", v, err)
			}
			return
		}
		if p.String() != v || p.Start().After(usageNow) || p.Start().Before(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("%q parsed as %s (%v)", v, p, p.Start())
		}
		if p.End().Sub(p.Start()) < 28*24*time.Hour {
			t.Fatalf("%q: a period of %v", v, p.End().Sub(p.Start()))
		}
	})
}
