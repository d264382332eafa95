package sqlite

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cgp-platform/cgp/eventlog"
)

func metadataSeeds() []string {
	var seeds []string
	for _, m := range []eventlog.Metadata{
		{},
		{CorrelationID: "req_1"},
		{CorrelationID: "req_1", CausationID: "evt_2", Actor: "tok_3", Source: "api", KeyIDs: []string{"shop:s", "customer:c"}},
		{Actor: "webhook:abc", KeyIDs: []string{"x"}},
		{Actor: `quote " and \ backslash`, Source: "<html>&"},
		{Actor: "ünïcødé ✓", CausationID: "\x00\x1f"},
		{KeyIDs: []string{"", ""}},
	} {
		raw, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		seeds = append(seeds, string(raw))
	}
	return append(seeds,
		`{"actor":"a","actor":"b"}`, `{"Actor":"x"}`, `{ "actor":"a"}`, `{"actor":null}`,
		`{"key_ids":[]}`, `{"key_ids":["a",]}`, `{"key_ids":["a"],}`, `{"actor":"a",}`,
		`{"unknown":"x"}`, `{"actor":"\u00e9"}`, `{"actor":"`+"\xff"+`"}`, `{"key_ids":["a""b"]}`,
		`{"key_ids":[`, `{"actor"}`, `{}`, `{`, `null`, ``,
	)
}

// decodeMetadata must give exactly what encoding/json gives.
func checkDecodeMetadata(t *testing.T, raw string) {
	var want eventlog.Metadata
	wantErr := raw != "" && raw != "{}" && json.Unmarshal([]byte(raw), &want) != nil
	var got eventlog.Metadata
	err := decodeMetadata(raw, &got)
	if (err != nil) != wantErr {
		t.Fatalf("decodeMetadata(%q) error %v, encoding/json error %v", raw, err, wantErr)
	}
	if !wantErr && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeMetadata(%q) = %#v, encoding/json gives %#v", raw, got, want)
	}
}

func TestDecodeMetadataMatchesEncodingJSON(t *testing.T) {
	for _, raw := range metadataSeeds() {
		checkDecodeMetadata(t, raw)
	}
	// The fast path is taken for what json.Marshal writes without escapes.
	var m eventlog.Metadata
	if !parseCompactMetadata(`{"correlation_id":"req_1","actor":"tok_1","source":"api","key_ids":["a","b"]}`, &m) {
		t.Error("compact metadata was not parsed by the fast path")
	}
}

func FuzzDecodeMetadata(f *testing.F) {
	for _, raw := range metadataSeeds() {
		f.Add(raw)
	}
	f.Fuzz(checkDecodeMetadata)
}
