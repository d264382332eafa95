package whatsapp_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/whatsapp"
)

// seed adds every fixture of testdata to f.
func seed(f *testing.F) {
	names, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"entry":[{"id":"1","ID":"2","changes":[{"field":"messages","value":{"statuses":[{"id":"x","status":"sent","timestamp":1}]}}]}]}`))
}

// validation reports whether err is a validation *domain.Error naming a
// field.
func validation(err error) bool {
	var de *domain.Error
	return errors.As(err, &de) && de.Code == domain.CodeInvalid && de.Field != ""
}

// FuzzParse checks that any body either fails as a validation error or
// parses deterministically into entries with numeric ids that AccountIDs
// also finds (so the receiver verified every entry it processes), and that
// every change value parses or fails the same way.
func FuzzParse(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := whatsapp.Parse(body)
		if err != nil {
			if !validation(err) || n != nil {
				t.Fatalf("error %v (value %+v) is not a validation error naming a field", err, n)
			}
			return
		}
		again, _ := whatsapp.Parse(body)
		if !reflect.DeepEqual(n, again) {
			t.Fatal("not deterministic")
		}
		for _, e := range n.Entries {
			if !domain.ValidMetaID(e.ID) {
				t.Fatalf("entry id %q accepted", e.ID)
			}
			for _, c := range e.Changes {
				checkChange(t, e, c)
			}
		}
	})
}

func checkChange(t *testing.T, e whatsapp.Entry, c whatsapp.Change) {
	var err error
	switch c.Field {
	case whatsapp.FieldMessages:
		var m *whatsapp.Messages
		m, err = whatsapp.ParseMessages(e.ID, c.Value)
		if err == nil {
			for _, msg := range m.Messages {
				if msg.BusinessAccountID != e.ID {
					t.Fatalf("message of %q in entry %q", msg.BusinessAccountID, e.ID)
				}
			}
		}
	case whatsapp.FieldTemplateStatus:
		_, err = whatsapp.ParseTemplateStatus(e.ID, e.Time, c.Value)
	case whatsapp.FieldQuality:
		_, err = whatsapp.ParseQualityUpdate(e.ID, e.Time, c.Value)
	case whatsapp.FieldAccountAlerts:
		_, err = whatsapp.ParseAccountAlert(e.ID, e.Time, c.Value)
	case whatsapp.FieldAccountReview:
		_, err = whatsapp.ParseAccountReview(c.Value)
	}
	if err != nil && !validation(err) {
		t.Fatalf("%s: error %v is not a validation error", c.Field, err)
	}
}

// FuzzAccountIDs checks that the tolerant scan never panics, returns
// distinct ids, and finds every entry id encoding/json reads from a
// well-formed body whose keys are plain ASCII.
func FuzzAccountIDs(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		ids := whatsapp.AccountIDs(body)
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("id %q twice", id)
			}
			seen[id] = true
		}
		n, err := whatsapp.Parse(body)
		if err != nil || !isASCII(body) {
			return
		}
		for _, e := range n.Entries {
			if !seen[e.ID] {
				t.Fatalf("entry %q parsed but not found by the scan (ids %q)", e.ID, ids)
			}
		}
	})
}

func isASCII(b []byte) bool {
	return !strings.ContainsFunc(string(b), func(r rune) bool { return r > 127 }) && !strings.Contains(string(b), `\u`)
}

// FuzzVerify checks that a signature verifies only for its own body.
func FuzzVerify(f *testing.F) {
	seed(f)
	secret := []byte("0123456789abcdef0123456789abcdef")
	f.Fuzz(func(t *testing.T, body []byte) {
		sig := whatsapp.Sign(secret, body)
		if !whatsapp.Verify(secret, body, sig) {
			t.Fatal("own signature refused")
		}
		if whatsapp.Verify(secret, append(body, ' '), sig) {
			t.Fatal("signature of another body accepted")
		}
		if whatsapp.Verify(secret, body, string(body)) && len(body) > 0 {
			t.Fatal("the body accepted as its own signature")
		}
	})
}
