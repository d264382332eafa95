package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// ChainHash returns the hash linking e to the previous event of its stream:
// SHA-256 over prev and a length-prefixed encoding of every field the
// producer chose (id, stream, revision, type, schema version, shop,
// occurred-at, data, metadata). Fields the store assigns on its own
// (position, recorded-at) are left out so that every adapter computes the
// same chain for the same stream.
func ChainHash(prev []byte, e *Event) []byte {
	h := sha256.New()
	var num, length [8]byte // separate buffers: field writes the length prefix
	field := func(b []byte) {
		binary.BigEndian.PutUint64(length[:], uint64(len(b)))
		h.Write(length[:])
		h.Write(b)
	}
	field(prev)
	field(e.ID[:])
	field([]byte(e.StreamID))
	binary.BigEndian.PutUint64(num[:], e.Revision)
	field(num[:])
	field([]byte(e.Type))
	binary.BigEndian.PutUint64(num[:], uint64(e.SchemaVersion))
	field(num[:])
	field([]byte(e.ShopID))
	binary.BigEndian.PutUint64(num[:], uint64(e.OccurredAt.UTC().UnixNano()))
	field(num[:])
	field(e.Data)
	meta, _ := json.Marshal(e.Metadata) // a struct of strings: never fails
	field(meta)
	return h.Sum(nil)
}

// ChainVerifier checks the hash chains of many streams read in log order
// (ReadAll order): each event must link to the hash of the previous event of
// its stream, its revision must follow it, and its own hash must be right.
type ChainVerifier struct {
	last map[string]streamHead
}

type streamHead struct {
	revision uint64
	hash     []byte
}

// NewChainVerifier returns a verifier with no streams seen.
func NewChainVerifier() *ChainVerifier {
	return &ChainVerifier{last: make(map[string]streamHead)}
}

// Check verifies the next event of its stream. It returns an error naming the
// event when the chain is broken. Streams whose first event is not revision 0
// are verified from the first event seen.
func (v *ChainVerifier) Check(e *Event) error {
	head, seen := v.last[e.StreamID]
	if seen {
		if e.Revision != head.revision+1 {
			return fmt.Errorf("event %s (%s@%d): revision gap after %d", e.ID, e.StreamID, e.Revision, head.revision)
		}
		if !bytes.Equal(e.PrevHash, head.hash) {
			return fmt.Errorf("event %s (%s@%d): previous-hash link broken", e.ID, e.StreamID, e.Revision)
		}
	} else if e.Revision == 0 && len(e.PrevHash) != 0 {
		return fmt.Errorf("event %s (%s@0): first event links to a predecessor", e.ID, e.StreamID)
	}
	if want := ChainHash(e.PrevHash, e); !bytes.Equal(want, e.Hash) {
		return fmt.Errorf("event %s (%s@%d): content does not match its hash", e.ID, e.StreamID, e.Revision)
	}
	v.last[e.StreamID] = streamHead{revision: e.Revision, hash: e.Hash}
	return nil
}
