package esdb

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
)

var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func testCodec(prefix string) codec {
	return codec{prefix: prefix, now: func() time.Time { return testNow }}
}

func sampleData() eventlog.EventData {
	return eventlog.EventData{
		ID:            uuid.MustParse("0b9a3b4e-5c7d-4e8f-9a1b-2c3d4e5f6a7b"),
		Type:          "CustomerCreated",
		SchemaVersion: 2,
		ShopID:        "shop_1",
		// Not UTC, nanosecond precision: stored and returned as the same
		// instant in UTC.
		OccurredAt: time.Date(2024, 2, 29, 23, 59, 59, 123456789, time.FixedZone("UTC-5", -5*3600)),
		Data:       []byte{0, 1, 2, 0xff, '{', '}'},
		Metadata: eventlog.Metadata{
			CorrelationID: "req_1", CausationID: "evt_0", Actor: "tok_1", Source: "api",
			KeyIDs: []string{"shop:shop_1", "customer:cus_1"},
		},
	}
}

// recorded plays the server: what a read returns for an appended event.
func recorded(name string, rev uint64, pos uint64, d es.EventData) *es.RecordedEvent {
	return &es.RecordedEvent{
		EventID:      d.EventID,
		EventType:    d.EventType,
		ContentType:  "application/octet-stream",
		StreamID:     name,
		EventNumber:  rev,
		Position:     es.Position{Commit: pos, Prepare: pos},
		CreatedDate:  time.Date(2025, 1, 1, 0, 0, 0, 100, time.UTC),
		Data:         d.Data,
		UserMetadata: d.Metadata,
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	for _, prefix := range []string{"", "ns1_"} {
		c := testCodec(prefix)
		in := sampleData()
		e := chainEvent("customer-cus_1", 0, nil, in)
		d, err := toEventData(&e)
		if err != nil {
			t.Fatal(err)
		}
		if d.EventID != in.ID || d.EventType != in.Type || d.ContentType != es.ContentTypeBinary || !bytes.Equal(d.Data, in.Data) {
			t.Errorf("event data %+v does not carry id, type, binary content and payload of %+v", d, in)
		}
		var meta map[string]any
		if err := json.Unmarshal(d.Metadata, &meta); err != nil {
			t.Fatalf("metadata is not JSON: %v", err)
		}
		if meta["$correlationId"] != "req_1" || meta["$causationId"] != "evt_0" || meta["occurred_at"] != "2024-03-01T04:59:59.123456789Z" {
			t.Errorf("metadata document %s lacks the server's correlation keys or the UTC occurred_at", d.Metadata)
		}

		got, err := c.decode(recorded(c.server("customer-cus_1"), 0, 4242, d))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		want := eventlog.Event{
			EventData:  in,
			StreamID:   "customer-cus_1",
			Revision:   0,
			Position:   4242,
			RecordedAt: time.Date(2025, 1, 1, 0, 0, 0, 100, time.UTC),
			Hash:       e.Hash,
		}
		want.OccurredAt = in.OccurredAt.UTC()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("prefix %q: round trip\n got %+v\nwant %+v", prefix, got, want)
		}
		if got.OccurredAt.Location() != time.UTC || got.RecordedAt.Location() != time.UTC {
			t.Errorf("times not in UTC: %s, %s", got.OccurredAt.Location(), got.RecordedAt.Location())
		}
	}
}

func TestEnvelopeChainVerifies(t *testing.T) {
	c := testCodec("ns_")
	var prev []byte
	v := eventlog.NewChainVerifier()
	for rev := uint64(0); rev < 4; rev++ {
		in := sampleData()
		in.ID = uuid.New()
		in.Data = []byte{byte(rev)}
		e := chainEvent("order-1", rev, prev, in)
		if rev == 0 && e.PrevHash != nil {
			t.Fatalf("first event links to %x", e.PrevHash)
		}
		d, err := toEventData(&e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.decode(recorded("ns_order-1", rev, 1000+rev*100, d))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.PrevHash, prev) {
			t.Fatalf("revision %d: prev hash %x, want %x", rev, got.PrevHash, prev)
		}
		// Verified over the port's stream id, without the namespace.
		if err := v.Check(&got); err != nil {
			t.Fatalf("revision %d: %v", rev, err)
		}
		prev = got.Hash
	}
	// Same events under another prefix hash the same: the chain is the
	// port's, not the server's names.
	a := chainEvent("order-1", 0, nil, sampleData())
	b := chainEvent("order-1", 0, nil, sampleData())
	if !bytes.Equal(a.Hash, b.Hash) {
		t.Error("chain hash not deterministic")
	}
	if c := chainEvent("order-2", 0, nil, sampleData()); bytes.Equal(a.Hash, c.Hash) {
		t.Error("chain hash ignores the stream")
	}
}

func TestEnvelopeEmptyPayload(t *testing.T) {
	in := sampleData()
	in.Data = nil
	in.Metadata = eventlog.Metadata{}
	in.ShopID = ""
	e := chainEvent("s-1", 0, nil, in)
	d, err := toEventData(&e)
	if err != nil {
		t.Fatal(err)
	}
	if d.Data == nil {
		t.Error("nil payload sent as nil; the client needs a non-nil slice")
	}
	got, err := testCodec("").decode(recorded("s-1", 0, 77, d))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 0 || got.ShopID != "" || !reflect.DeepEqual(got.Metadata, eventlog.Metadata{}) {
		t.Errorf("empty fields came back as %+v", got)
	}
	if want := eventlog.ChainHash(nil, &got); !bytes.Equal(want, got.Hash) {
		t.Error("hash of the decoded event does not verify")
	}
}

func TestDecodeRejects(t *testing.T) {
	c := testCodec("ns_")
	e := chainEvent("s-1", 0, nil, sampleData())
	good, err := toEventData(&e)
	if err != nil {
		t.Fatal(err)
	}
	withMeta := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good.Metadata, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		edit func(r *es.RecordedEvent)
		want string
	}{
		{"no metadata", func(r *es.RecordedEvent) { r.UserMetadata = nil }, "not a cgp envelope"},
		{"foreign JSON", func(r *es.RecordedEvent) { r.UserMetadata = []byte(`{"foo":1}`) }, "unknown envelope version 0"},
		{"future version", func(r *es.RecordedEvent) {
			r.UserMetadata = withMeta(func(m map[string]any) { m["cgp_envelope"] = 2 })
		}, "unknown envelope version 2"},
		{"short hash", func(r *es.RecordedEvent) {
			r.UserMetadata = withMeta(func(m map[string]any) { m["hash"] = "AAEC" })
		}, "hash has 3 bytes"},
		{"short previous hash", func(r *es.RecordedEvent) {
			r.UserMetadata = withMeta(func(m map[string]any) { m["prev_hash"] = "AAEC" })
		}, "previous hash has 3 bytes"},
		{"bad occurred_at", func(r *es.RecordedEvent) {
			r.UserMetadata = withMeta(func(m map[string]any) { m["occurred_at"] = "yesterday" })
		}, "occurred_at"},
		{"unknown position", func(r *es.RecordedEvent) {
			r.Position = es.Position{Commit: math.MaxUint64, Prepare: math.MaxUint64}
		}, "no $all position"},
		{"zero position", func(r *es.RecordedEvent) { r.Position = es.Position{} }, "position 0/0"},
		{"other namespace", func(r *es.RecordedEvent) { r.StreamID = "other_s-1" }, "not an event of this log"},
		{"system stream", func(r *es.RecordedEvent) { r.StreamID = "$$ns_s-1" }, "not an event of this log"},
		{"system type", func(r *es.RecordedEvent) { r.EventType = "$metadata" }, "not an event of this log"},
		{"nothing", nil, "no event"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r *es.RecordedEvent
			if tc.edit != nil {
				r = recorded("ns_s-1", 0, 500, good)
				tc.edit(r)
			}
			_, err := c.decode(r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("decode error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	// The untouched record decodes: the cases above fail for their reason.
	if _, err := c.decode(recorded("ns_s-1", 0, 500, good)); err != nil {
		t.Fatalf("control record: %v", err)
	}
}

func TestRecordedAtFallsBackToClock(t *testing.T) {
	e := chainEvent("s-1", 0, nil, sampleData())
	d, err := toEventData(&e)
	if err != nil {
		t.Fatal(err)
	}
	r := recorded("s-1", 0, 9, d)
	r.CreatedDate = time.Time{}
	got, err := testCodec("").decode(r)
	if err != nil {
		t.Fatal(err)
	}
	if !got.RecordedAt.Equal(testNow) {
		t.Errorf("RecordedAt %s, want the injected clock's %s", got.RecordedAt, testNow)
	}
}

func TestBelongsAndFilter(t *testing.T) {
	cases := []struct {
		prefix, stream, typ string
		want                bool
	}{
		{"", "customer-1", "CustomerCreated", true},
		{"", "$stats-127.0.0.1:2113", "$statsCollected", false},
		{"", "$$customer-1", "$metadata", false},
		{"", "$projections-$all", "ProjectionUpdated", false},
		{"", "$ce-customer", "$>", false},
		{"", "customer-1", "$>", false},
		{"ns_", "ns_customer-1", "CustomerCreated", true},
		{"ns_", "customer-1", "CustomerCreated", false},
		{"ns_", "ns2_customer-1", "CustomerCreated", false},
		{"ns_", "$$ns_customer-1", "$metadata", false},
	}
	for _, tc := range cases {
		if got := testCodec(tc.prefix).belongs(tc.stream, tc.typ); got != tc.want {
			t.Errorf("prefix %q: belongs(%q, %q) = %v, want %v", tc.prefix, tc.stream, tc.typ, got, tc.want)
		}
	}
	if f := testCodec("").filter(); f.Type != es.EventFilterType || f.Regex != `^[^\$]` || len(f.Prefixes) != 0 {
		t.Errorf("filter without namespace = %+v, want event types not starting with '$'", f)
	}
	if f := testCodec("ns_").filter(); f.Type != es.StreamFilterType || !reflect.DeepEqual(f.Prefixes, []string{"ns_"}) || f.Regex != "" {
		t.Errorf("filter with namespace = %+v, want stream prefix ns_", f)
	}
}

func TestValidate(t *testing.T) {
	ok := sampleData()
	cases := []struct {
		name string
		edit func(d *eventlog.EventData)
		want string
	}{
		{"nil id", func(d *eventlog.EventData) { d.ID = uuid.Nil }, "id is required"},
		{"no type", func(d *eventlog.EventData) { d.Type = "" }, "type is required"},
		{"system type", func(d *eventlog.EventData) { d.Type = "$metadata" }, "reserved"},
	}
	for _, tc := range cases {
		d := ok
		tc.edit(&d)
		if err := validateEventData(3, &d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
	if err := validateEventData(0, &ok); err != nil {
		t.Errorf("valid event rejected: %v", err)
	}
	for _, s := range []string{"", "$all", "$$customer-1"} {
		if err := validateStream(s); err == nil {
			t.Errorf("stream %q accepted", s)
		}
	}
	if err := validateStream("customer-cus_1"); err != nil {
		t.Errorf("valid stream rejected: %v", err)
	}
}

// FuzzDecode feeds arbitrary server metadata and payloads to the decoder:
// it must never panic, and whatever it accepts must be a well-formed event.
func FuzzDecode(f *testing.F) {
	e := chainEvent("s-1", 0, nil, sampleData())
	good, err := toEventData(&e)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good.Metadata, good.Data)
	f.Add([]byte(`{"cgp_envelope":1,"hash":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","occurred_at":"2024-01-01T00:00:00Z"}`), []byte{})
	f.Add([]byte(`null`), []byte(nil))
	f.Add([]byte(`{"cgp_envelope":1,"metadata":{"key_ids":[1]}}`), []byte("x"))
	c := testCodec("")
	f.Fuzz(func(t *testing.T, meta, data []byte) {
		got, err := c.decode(recorded("s-1", 0, 100, es.EventData{EventID: e.ID, EventType: "T", Data: data, Metadata: meta}))
		if err != nil {
			return
		}
		if len(got.Hash) != hashLen || got.OccurredAt.Location() != time.UTC || got.Position != 100 || got.StreamID != "s-1" {
			t.Fatalf("accepted a malformed event: %+v", got)
		}
	})
}
