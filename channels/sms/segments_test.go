package sms_test

import (
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/channels/sms"
)

func TestSegments(t *testing.T) {
	cases := []struct {
		name string
		text string
		gsm  bool
		want int
	}{
		{"empty", "", true, 0},
		{"one GSM-7 character", "a", true, 1},
		{"160 GSM-7 characters", strings.Repeat("a", 160), true, 1},
		{"161 GSM-7 characters", strings.Repeat("a", 161), true, 2},
		{"306 GSM-7 characters", strings.Repeat("a", 306), true, 2},
		{"307 GSM-7 characters", strings.Repeat("a", 307), true, 3},
		{"accents of the default alphabet", strings.Repeat("é", 160), true, 1},
		{"the euro costs two septets", strings.Repeat("€", 80), true, 1},
		{"81 euros take 162 septets", strings.Repeat("€", 81), true, 2},
		// 152 septets, then an escape pair that would straddle the
		// boundary: it moves whole to the second part.
		{"an escape pair is never split", strings.Repeat("a", 152) + "{" + strings.Repeat("a", 7), true, 2},
		{"escape pair at a part's end", strings.Repeat("a", 152) + "[" + strings.Repeat("a", 152) + "]", true, 3},
		{"every extension character", "\f^{}\\[~]|€", true, 1},
		{"70 UCS-2 characters", strings.Repeat("ж", 70), false, 1},
		{"71 UCS-2 characters", strings.Repeat("ж", 71), false, 2},
		{"134 UCS-2 characters", strings.Repeat("ж", 134), false, 2},
		{"135 UCS-2 characters", strings.Repeat("ж", 135), false, 3},
		{"one non-GSM character makes it UCS-2", strings.Repeat("a", 70) + "ç", false, 2},
		{"an emoji costs two units", strings.Repeat("😀", 35), false, 1},
		{"36 emoji take 72 units", strings.Repeat("😀", 36), false, 2},
		// 66 units then an emoji: its surrogate pair moves whole, so 134
		// units take three parts, not two.
		{"a surrogate pair is never split", strings.Repeat("ж", 66) + "😀" + strings.Repeat("ж", 66), false, 3},
		{"a tab is not GSM-7", "a\tb", false, 1},
		{"invalid UTF-8 counts one unit a byte", "\xff", false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := sms.IsGSM7(tc.text); got != tc.gsm {
				t.Errorf("IsGSM7 = %v, want %v", got, tc.gsm)
			}
			if got := sms.Segments(tc.text); got != tc.want {
				t.Errorf("Segments = %d, want %d", got, tc.want)
			}
		})
	}
}

// FuzzSegments: the count is never below the lower bound the sizes give
// nor above one part per character, and adding text never lowers it.
func FuzzSegments(f *testing.F) {
	for _, s := range []string{"", "a", strings.Repeat("€", 81), strings.Repeat("ж", 66) + "😀", "\xff\xfe"} {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		n := sms.Segments(a)
		if a == "" {
			if n != 0 {
				t.Fatalf("empty text takes %d", n)
			}
			return
		}
		if n < 1 || n > len([]rune(a)) {
			t.Fatalf("%q takes %d segments", a, n)
		}
		if sms.IsGSM7(a) == sms.IsGSM7(a+b) && sms.Segments(a+b) < n {
			t.Fatalf("%q takes %d segments, %q fewer", a, n, a+b)
		}
	})
}
