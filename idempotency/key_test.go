package idempotency_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
)

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		ok     bool
	}{
		{"uuid", []string{"8e03978e-40d5-43e8-bc93-6894a57f9324"}, true},
		{"255 ASCII", []string{strings.Repeat("a", 255)}, true},
		{"255 runes of 3 bytes", []string{strings.Repeat("€", 255)}, true},
		{"inner space and punctuation", []string{`order 42 / "retry"; v=1`}, true},
		{"256 ASCII", []string{strings.Repeat("a", 256)}, false},
		{"256 runes", []string{strings.Repeat("€", 256)}, false},
		{"empty", []string{""}, false},
		{"twice", []string{"a", "a"}, false},
		{"NUL", []string{"a\x00b"}, false},
		{"newline", []string{"a\nb"}, false},
		{"tab", []string{"a\tb"}, false},
		{"DEL", []string{"a\x7fb"}, false},
		{"C1 control", []string{"a\u0085b"}, false},
		{"invalid UTF-8", []string{"a\xffb"}, false},
		{"truncated UTF-8", []string{"a\xe2\x82"}, false},
		{"encoded replacement character", []string{"a\uFFFDb"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, present, err := idempotency.ParseKey(http.Header{idempotency.HeaderKey: tc.values})
			if !present {
				t.Fatal("present = false for a header that is there")
			}
			if tc.ok {
				if err != nil || key != tc.values[0] {
					t.Fatalf("ParseKey = %q, %v; want the value verbatim", key, err)
				}
				return
			}
			checkParseError(t, err)
		})
	}
	if _, present, err := idempotency.ParseKey(http.Header{}); present || err != nil {
		t.Fatalf("absent header: present %v, err %v", present, err)
	}
}

func checkParseError(t *testing.T, err error) {
	t.Helper()
	var he *httpapi.Error
	if !errors.As(err, &he) {
		t.Fatalf("error %v is not an *httpapi.Error", err)
	}
	if he.Status != http.StatusBadRequest || he.Code != httpapi.CodeInvalidParameter || he.Details["field"] != idempotency.HeaderKey {
		t.Fatalf("error = %d %s %v, want 400 invalid_parameter on Idempotency-Key", he.Status, he.Code, he.Details)
	}
}

// FuzzParseKey checks ParseKey against the rule stated independently: a
// key is accepted exactly when it is 1 to 255 characters of valid UTF-8
// with no control character, and is then returned verbatim; anything else
// is a 400 naming the header, whose message never quotes the key.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"", "a", "8e03978e-40d5-43e8-bc93-6894a57f9324", strings.Repeat("x", 255),
		strings.Repeat("x", 256), "a\tb", "\xff", "é", "\u0085", "\x7f", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, present, err := idempotency.ParseKey(http.Header{idempotency.HeaderKey: {s}})
		if !present {
			t.Fatal("present = false")
		}
		valid := s != "" && utf8.ValidString(s) && utf8.RuneCountInString(s) <= idempotency.MaxKeyLength &&
			strings.IndexFunc(s, unicode.IsControl) < 0
		if valid {
			if err != nil || key != s {
				t.Fatalf("ParseKey(%q) = %q, %v; want it accepted verbatim", s, key, err)
			}
			return
		}
		checkParseError(t, err)
		var he *httpapi.Error
		errors.As(err, &he)
		if len(s) >= 8 && strings.Contains(he.Message, s) {
			t.Fatalf("the error message quotes the key: %q", he.Message)
		}
	})
}

func TestFingerprint(t *testing.T) {
	base := idempotency.Fingerprint(http.MethodPost, "/api/v1/campaigns", []byte(`{"a":1}`))
	if base != idempotency.Fingerprint(http.MethodPost, "/api/v1/campaigns", []byte(`{"a":1}`)) {
		t.Fatal("Fingerprint is not deterministic")
	}
	if len(base) != 64 {
		t.Fatalf("Fingerprint has %d characters, want 64 hex", len(base))
	}
	for name, other := range map[string]string{
		"method":            idempotency.Fingerprint(http.MethodPatch, "/api/v1/campaigns", []byte(`{"a":1}`)),
		"path":              idempotency.Fingerprint(http.MethodPost, "/api/v1/campaign", []byte(`{"a":1}`)),
		"query":             idempotency.Fingerprint(http.MethodPost, "/api/v1/campaigns?x=1", []byte(`{"a":1}`)),
		"body":              idempotency.Fingerprint(http.MethodPost, "/api/v1/campaigns", []byte(`{"a": 1}`)),
		"method/path split": idempotency.Fingerprint("POST/", "api/v1/campaigns", []byte(`{"a":1}`)),
	} {
		if other == base {
			t.Errorf("a different %s gives the same fingerprint", name)
		}
	}
}
