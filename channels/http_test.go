package channels_test

import (
	"testing"
	"time"

	"github.com/cgp-platform/cgp/channels"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"30":                            30 * time.Second,
		" 5 ":                           5 * time.Second,
		"0":                             0,
		"-3":                            0,
		"999999":                        24 * time.Hour,
		"Fri, 27 Nov 2026 10:01:00 GMT": time.Minute,
		"Fri, 27 Nov 2026 09:00:00 GMT": 0,
		"Sun, 29 Nov 2026 10:00:00 GMT": 24 * time.Hour,
		"soon":                          0,
	} {
		if got := channels.ParseRetryAfter(v, now); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}
