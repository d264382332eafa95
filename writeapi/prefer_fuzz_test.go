package writeapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/httpapi"
)

func TestPreferWait(t *testing.T) {
	for _, c := range []struct {
		header string
		want   time.Duration
		bad    bool
	}{
		{"", 0, false},
		{"wait=10", 10 * time.Second, false},
		{"respond-async, wait=5", 5 * time.Second, false},
		{"return=minimal; foo=bar, WAIT=3", 3 * time.Second, false},
		{`wait="7"`, 7 * time.Second, false},
		{"wait=600", MaxImageWait, false},
		{"handling=lenient", 0, false},
		{"wait=soon", 0, true},
		{"wait=-1", 0, true},
		{"wait=99999999999", 0, true},
	} {
		h := http.Header{}
		if c.header != "" {
			h.Set("Prefer", c.header)
		}
		got, err := preferWait(h)
		if c.bad {
			if e, ok := err.(*httpapi.Error); !ok || e.Status != http.StatusBadRequest {
				t.Errorf("Prefer %q: %v, want a 400", c.header, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Prefer %q = %v, %v; want %v", c.header, got, err, c.want)
		}
	}
}

// FuzzPreferWait: any Prefer header gives a wait from 0 to MaxImageWait or
// a 400 naming Prefer, never a panic.
func FuzzPreferWait(f *testing.F) {
	for _, s := range []string{"wait=10", "respond-async, wait=5", `wait="7"`, "wait=", "=,;", "wait=1;wait=2", "wait=0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"Prefer": []string{v}}
		d, err := preferWait(h)
		if err != nil {
			e, ok := err.(*httpapi.Error)
			if !ok || e.Status != http.StatusBadRequest || e.Details["field"] != "Prefer" {
				t.Fatalf("Prefer %q: %v", v, err)
			}
			return
		}
		if d < 0 || d > MaxImageWait {
			t.Fatalf("Prefer %q: wait %v", v, d)
		}
	})
}
