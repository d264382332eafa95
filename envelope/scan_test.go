package envelope

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestTopLevelValuesIgnoresNestedNamesakes(t *testing.T) {
	raw := []byte(`{"note_attributes":{"email":"nested@example.com"},"lines":[{"email":"x"}],"say":"\"email\":\"no\"","email":"top@example.com","n":12,"phone":null}`)
	spans, err := topLevelValues(raw, []string{"email", "phone", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 || string(raw[spans[0].start:spans[0].end]) != `"top@example.com"` ||
		spans[1].field != "phone" || string(raw[spans[1].start:spans[1].end]) != "null" {
		t.Fatalf("spans %+v", spans)
	}
	for _, bad := range []string{``, `[]`, `{"a":`, `{"a":"x`, `{"a":{"b":1}`, `{"a" 1}`} {
		if _, err := topLevelValues([]byte(bad), []string{"a"}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzTopLevelValues: on any object json.Marshal writes, the scanner finds
// exactly the top-level members a full decode finds, with the same values.
func FuzzTopLevelValues(f *testing.F) {
	f.Add([]byte(`{"email":"a@example.com","x":{"email":"b"},"phone":"+1"}`))
	f.Add([]byte(`{"email":["a",{"phone":"]"}],"phone":{"x":"}\\"{"}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var doc map[string]any
		if json.Unmarshal(in, &doc) != nil {
			return
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			return
		}
		// Event field names never need escaping; keys that do are
		// passed over by design.
		var fields []string
		for k := range doc {
			if q, _ := json.Marshal(k); !bytes.ContainsRune(q, '\\') {
				fields = append(fields, k)
			}
		}
		spans, err := topLevelValues(raw, fields)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if len(spans) != len(fields) {
			t.Fatalf("%s: %d spans for %d members", raw, len(spans), len(fields))
		}
		for _, sp := range spans {
			want, _ := json.Marshal(doc[sp.field])
			if got := raw[sp.start:sp.end]; !bytes.Equal(got, want) {
				t.Fatalf("%s: %s = %s, want %s", raw, sp.field, got, want)
			}
		}
	})
}
