package httpapi_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/httpapi"
)

type position struct {
	CreatedAt time.Time `json:"c"`
	ID        string    `json:"i"`
}

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func mustCodec(t testing.TB, key []byte, previous ...[]byte) *httpapi.CursorCodec {
	t.Helper()
	c, err := httpapi.NewCursorCodec(key, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var customersQuery = httpapi.Fingerprint{Resource: "customers", Sort: "-created_at",
	Filters: map[string]string{"lifecycle_stage": "loyal"}}

func wantInvalidCursor(t *testing.T, err error) {
	t.Helper()
	var he *httpapi.Error
	if !errors.As(err, &he) || he.Status != 400 || he.Code != "invalid_cursor" {
		t.Fatalf("err = %v, want 400 invalid_cursor", err)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	c := mustCodec(t, testKey(1))
	pos := position{CreatedAt: time.Date(2026, 5, 1, 12, 0, 0, 123, time.UTC), ID: "cus_abc"}
	s, err := c.Encode(customersQuery, pos)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := base64.RawURLEncoding.DecodeString(s); err != nil {
		t.Fatalf("cursor %q is not unpadded base64url: %v", s, err)
	}
	var got position
	if err := c.Decode(s, customersQuery, &got); err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(pos.CreatedAt) || got.ID != pos.ID {
		t.Fatalf("decoded %+v, want %+v", got, pos)
	}
	again, _ := c.Encode(customersQuery, pos)
	if again != s {
		t.Error("encoding is not deterministic")
	}
}

// TestCursorFormatIsStable pins the version-1 format: a cursor issued by an
// earlier release must keep decoding. If this test fails, add a version
// instead of changing version 1.
func TestCursorFormatIsStable(t *testing.T) {
	c := mustCodec(t, testKey(7))
	pos := struct {
		Spent string `json:"s"`
		ID    string `json:"i"`
	}{"120.50", "cus_X"}
	const golden = "AXsicSI6IkcxS1BvaU1qNmFvIiwicCI6eyJzIjoiMTIwLjUwIiwiaSI6ImN1c19YIn19msdRqP6XI0fxgmuxyGWwXw"
	got, err := c.Encode(customersQuery, pos)
	if err != nil {
		t.Fatal(err)
	}
	if got != golden {
		t.Errorf("cursor format changed:\n got %s\nwant %s", got, golden)
	}
	// The documented layout: 0x01 || JSON payload || HMAC-SHA256(key,
	// "cgp-cursor" || 0x01 || payload)[:16].
	raw, err := base64.RawURLEncoding.DecodeString(golden)
	if err != nil {
		t.Fatal(err)
	}
	payload, sig := raw[1:len(raw)-16], raw[len(raw)-16:]
	m := hmac.New(sha256.New, testKey(7))
	m.Write([]byte("cgp-cursor\x01"))
	m.Write(payload)
	if raw[0] != 1 || !hmac.Equal(sig, m.Sum(nil)[:16]) {
		t.Errorf("golden cursor does not follow the documented layout")
	}
	if want := `{"q":"G1KPoiMj6ao","p":{"s":"120.50","i":"cus_X"}}`; string(payload) != want {
		t.Errorf("payload = %s, want %s", payload, want)
	}
	var back struct {
		Spent string `json:"s"`
		ID    string `json:"i"`
	}
	if err := c.Decode(golden, customersQuery, &back); err != nil || back.ID != "cus_X" {
		t.Errorf("golden cursor no longer decodes: %v %+v", err, back)
	}
}

func TestCursorRejections(t *testing.T) {
	c := mustCodec(t, testKey(1))
	good, _ := c.Encode(customersQuery, position{ID: "cus_1"})
	raw, _ := base64.RawURLEncoding.DecodeString(good)

	flip := func(i int) string {
		b := bytes.Clone(raw)
		b[i] ^= 0x01
		return base64.RawURLEncoding.EncodeToString(b)
	}
	otherKey, _ := mustCodec(t, testKey(2)).Encode(customersQuery, position{ID: "cus_1"})
	cases := map[string]struct {
		cursor string
		query  httpapi.Fingerprint
	}{
		"empty":              {"", customersQuery},
		"not base64":         {"!!!not-base64!!!", customersQuery},
		"padded":             {good + "=", customersQuery},
		"too short":          {base64.RawURLEncoding.EncodeToString(raw[:10]), customersQuery},
		"version byte":       {flip(0), customersQuery},
		"payload tampered":   {flip(10), customersQuery},
		"mac tampered":       {flip(len(raw) - 1), customersQuery},
		"other key":          {otherKey, customersQuery},
		"other resource":     {good, httpapi.Fingerprint{Resource: "orders", Sort: "-created_at", Filters: customersQuery.Filters}},
		"other sort":         {good, httpapi.Fingerprint{Resource: "customers", Sort: "created_at", Filters: customersQuery.Filters}},
		"other filter value": {good, httpapi.Fingerprint{Resource: "customers", Sort: "-created_at", Filters: map[string]string{"lifecycle_stage": "new"}}},
		"filter dropped":     {good, httpapi.Fingerprint{Resource: "customers", Sort: "-created_at"}},
		"huge":               {string(bytes.Repeat([]byte("A"), 5000)), customersQuery},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var p position
			wantInvalidCursor(t, c.Decode(tc.cursor, tc.query, &p))
		})
	}
	t.Run("position of another shape", func(t *testing.T) {
		var wrong struct {
			ID int `json:"i"`
		}
		wantInvalidCursor(t, c.Decode(good, customersQuery, &wrong))
	})
}

func TestCursorNoFiltersNilOrEmptyIsTheSameQuery(t *testing.T) {
	c := mustCodec(t, testKey(1))
	s, _ := c.Encode(httpapi.Fingerprint{Resource: "customers", Sort: "-created_at", Filters: map[string]string{}}, position{ID: "x"})
	var p position
	if err := c.Decode(s, httpapi.Fingerprint{Resource: "customers", Sort: "-created_at"}, &p); err != nil {
		t.Fatal(err)
	}
}

func TestCursorKeyRotation(t *testing.T) {
	old := mustCodec(t, testKey(1))
	s, _ := old.Encode(customersQuery, position{ID: "cus_1"})
	rotated := mustCodec(t, testKey(2), testKey(1))
	var p position
	if err := rotated.Decode(s, customersQuery, &p); err != nil || p.ID != "cus_1" {
		t.Fatalf("cursor of the previous key rejected: %v", err)
	}
	s2, _ := rotated.Encode(customersQuery, position{ID: "cus_2"})
	wantInvalidCursor(t, old.Decode(s2, customersQuery, &p))
}

func TestNewCursorCodecRejectsShortKeys(t *testing.T) {
	if _, err := httpapi.NewCursorCodec(make([]byte, 16)); err == nil {
		t.Error("16-byte key accepted")
	}
	if _, err := httpapi.NewCursorCodec(testKey(1), []byte("short")); err == nil {
		t.Error("short previous key accepted")
	}
}
