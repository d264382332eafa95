package providers_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/providers"
)

func fixture(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "statuses.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParse(t *testing.T) {
	cb, err := providers.Parse("twilio", fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []domain.MessageStatus{
		{Source: "provider:twilio", MessageID: "SM5f2c1a9e0b7d4e3f8a6b2c1d0e9f8a7b", Status: "delivered", At: time.Date(2026, 11, 1, 10, 0, 5, 0, time.UTC)},
		{Source: "provider:twilio", MessageID: "SM5f2c1a9e0b7d4e3f8a6b2c1d0e9f8a7b", Status: "read", At: time.Unix(1793527260, 0).UTC()},
		{Source: "provider:twilio", MessageID: "SM0a1b2c3d4e5f60718293a4b5c6d7e8f9", Status: "failed", At: time.Unix(1793527300, 0).UTC(), ErrorCode: "30008"},
		{Source: "provider:twilio", MessageID: "SM99aa88bb77cc66dd55ee44ff33aa22bb", Status: "failed", At: time.Date(2026, 11, 1, 9, 2, 0, 0, time.UTC), ErrorCode: "63016"},
	}
	if len(cb.Statuses) != len(want) {
		t.Fatalf("%d statuses", len(cb.Statuses))
	}
	for i, s := range cb.Statuses {
		if s != want[i] {
			t.Errorf("status %d = %+v, want %+v", i, s, want[i])
		}
	}
	if cb, err := providers.Parse("x", []byte(`{"statuses":[]}`)); err != nil || len(cb.Statuses) != 0 {
		t.Errorf("empty statuses: %+v %v", cb, err)
	}
}

func TestParseRejects(t *testing.T) {
	for name, body := range map[string]string{
		"not json":      `{"statuses": [`,
		"no statuses":   `{}`,
		"statuses null": `{"statuses":null}`,
		"object":        `{"statuses":{}}`,
		"bad time":      `{"statuses":[{"message_id":"a","status":"read","timestamp":"yesterday"}]}`,
		"epoch range":   `{"statuses":[{"message_id":"a","status":"read","timestamp":999999999999}]}`,
		"code object":   `{"statuses":[{"message_id":"a","status":"failed","error_code":{}}]}`,
		"trailing":      `{"statuses":[]}]`,
	} {
		if _, err := providers.Parse("x", []byte(body)); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// FuzzParse checks that any body fails as a validation error or parses
// into statuses of the provider.
func FuzzParse(f *testing.F) {
	f.Add(fixture(f))
	f.Add([]byte(`{"statuses":[{"message_id":"a","status":"read","timestamp":null,"error_code":null}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		cb, err := providers.Parse("acme", body)
		if err != nil {
			if domain.ErrorCode(err) != domain.CodeInvalid || cb != nil {
				t.Fatalf("error %v with %+v", err, cb)
			}
			return
		}
		for _, s := range cb.Statuses {
			if s.Source != "provider:acme" || (!s.At.IsZero() && s.At.Location() != time.UTC) {
				t.Fatalf("status %+v", s)
			}
		}
	})
}
