package payload_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cgp-platform/cgp/ingest/payload"
)

// seed adds this package's fixtures and the webhook fixtures of the
// receivers that decode with it.
func seed(f *testing.F) {
	var names []string
	for _, pattern := range []string{"testdata/*", "../*/testdata/*.json"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		names = append(names, m...)
	}
	if len(names) == 0 {
		f.Fatal("no fixtures")
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{``, `null`, `"x"`, `1`, `-0.0e+1`, `true`, `{}`, `[]`, `{"a":1} {`, `"\ud800"`, `01`} {
		f.Add([]byte(s))
	}
}

// FuzzDecode checks Decode against encoding/json: any body decodes into an
// empty interface exactly when it is one valid JSON value, and a failure
// is always a validation error on the body; a value decodes as Text
// exactly when it is a string, a number or null, as its text.
func FuzzDecode(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		var v any
		err := payload.Decode(body, &v)
		if err != nil {
			if !invalidOn(err, payload.Field) {
				t.Fatalf("error %v is not a validation error on %q", err, payload.Field)
			}
			if json.Valid(body) {
				t.Fatalf("valid JSON %q refused: %v", body, err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("invalid JSON %q accepted", body)
		}
		var tx payload.Text
		terr := payload.Decode(body, &tx)
		want, isText := "", true
		switch x := v.(type) {
		case nil:
		case string:
			want = x
		case json.Number:
			want = x.String()
		default:
			isText = false
		}
		switch {
		case isText && (terr != nil || string(tx) != want):
			t.Fatalf("%q as text: %q, %v; want %q", body, tx, terr, want)
		case !isText && !invalidOn(terr, payload.Field):
			t.Fatalf("%q (a %T) as text: %q, %v; want a validation error", body, v, tx, terr)
		}
	})
}
