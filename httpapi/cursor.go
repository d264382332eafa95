package httpapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Cursor format, version 1 (never change it; add a version instead):
//
//	base64url-nopad( 0x01 || payload || mac )
//	payload = canonical JSON {"q":"<query digest>","p":<position>}
//	mac     = HMAC-SHA256(key, "cgp-cursor" || 0x01 || payload)[:16]
//
// The query digest is base64url(SHA-256(canonical JSON of the Fingerprint))[:11],
// so a cursor only resumes the query (resource, sort, filters) it was made
// for. The position is the caller's JSON-encodable sort-key values; nothing
// in a cursor is secret, but nothing in it can be altered unnoticed.
const (
	cursorVersion1 = 1
	cursorMACLen   = 16
	cursorMaxLen   = 2048 // encoded characters; a real cursor is ~100
	cursorLabel    = "cgp-cursor"
	minCursorKey   = 32
)

// Fingerprint is the query a cursor is bound to. Limit and include are not
// part of it: a client may change the page size between pages.
type Fingerprint struct {
	// Resource names the list, including any parent ("customers",
	// "customer_orders:cus_…").
	Resource string `json:"r"`
	// Sort is the effective sort, e.g. "-created_at" (the default applied).
	Sort string `json:"s"`
	// Filters are the validated filter values by field name.
	Filters map[string]string `json:"f"`
}

func (f Fingerprint) digest() string {
	if len(f.Filters) == 0 {
		f.Filters = nil // no filters: the same query whether nil or empty
	}
	b, err := json.Marshal(f) // map keys are sorted: canonical
	if err != nil {
		panic("marshal fingerprint: " + err.Error()) // strings only: cannot fail
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:8])
}

// CursorCodec signs and verifies list cursors. It is safe for concurrent use.
type CursorCodec struct {
	keys [][]byte // keys[0] signs; all verify
}

// NewCursorCodec returns a codec signing with key (at least 32 bytes, e.g.
// derived from the service's master key). previous keys still verify
// cursors, so the key can be rotated without breaking clients' walks.
func NewCursorCodec(key []byte, previous ...[]byte) (*CursorCodec, error) {
	c := &CursorCodec{}
	for i, k := range append([][]byte{key}, previous...) {
		if len(k) < minCursorKey {
			return nil, fmt.Errorf("cursor key %d: %d bytes, need at least %d", i, len(k), minCursorKey)
		}
		c.keys = append(c.keys, bytes.Clone(k))
	}
	return c, nil
}

type cursorPayload struct {
	Q string          `json:"q"`
	P json.RawMessage `json:"p"`
}

// Encode returns the cursor for position (any JSON-encodable value: a small
// struct of the last item's sort-key values and id) within query.
func (c *CursorCodec) Encode(query Fingerprint, position any) (string, error) {
	p, err := json.Marshal(position)
	if err != nil {
		return "", fmt.Errorf("encode cursor position: %w", err)
	}
	payload, err := json.Marshal(cursorPayload{Q: query.digest(), P: p})
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	buf := make([]byte, 0, 1+len(payload)+cursorMACLen)
	buf = append(buf, cursorVersion1)
	buf = append(buf, payload...)
	buf = append(buf, c.mac(c.keys[0], payload)...)
	return base64.RawURLEncoding.EncodeToString(buf), nil
}

// Decode verifies cursor and unmarshals its position into dst (a pointer).
// It returns a 400 invalid_cursor *Error when the cursor is malformed, not
// signed by one of our keys, of an unknown version, or made for another
// query, or when its position does not fit dst.
func (c *CursorCodec) Decode(cursor string, query Fingerprint, dst any) error {
	raw, err := c.verify(cursor, query)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return invalidCursor("the cursor does not fit this list")
	}
	return nil
}

// verify checks everything but the position's shape and returns it.
func (c *CursorCodec) verify(cursor string, query Fingerprint) (json.RawMessage, error) {
	if cursor == "" || len(cursor) > cursorMaxLen {
		return nil, invalidCursor("the cursor is malformed")
	}
	buf, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(buf) < 1+cursorMACLen+2 {
		return nil, invalidCursor("the cursor is malformed")
	}
	if buf[0] != cursorVersion1 {
		return nil, invalidCursor("the cursor version is not supported")
	}
	payload, sig := buf[1:len(buf)-cursorMACLen], buf[len(buf)-cursorMACLen:]
	valid := false
	for _, k := range c.keys {
		if hmac.Equal(sig, c.mac(k, payload)) {
			valid = true
			break
		}
	}
	if !valid {
		return nil, invalidCursor("the cursor was not issued by this service")
	}
	var pl cursorPayload
	if err := json.Unmarshal(payload, &pl); err != nil || len(pl.P) == 0 {
		// Signed by us yet unreadable: only a bug could do that.
		return nil, invalidCursor("the cursor is malformed")
	}
	if pl.Q != query.digest() {
		return nil, invalidCursor("the cursor was issued for another query: keep the sort and filters of the first page")
	}
	return pl.P, nil
}

func (c *CursorCodec) mac(key, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(cursorLabel))
	m.Write([]byte{cursorVersion1})
	m.Write(payload)
	return m.Sum(nil)[:cursorMACLen]
}
