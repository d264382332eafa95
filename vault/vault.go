package vault

import (
	"context"
	"errors"
)

// KeySize is the size in bytes of every data key (AES-256).
const KeySize = 32

// ErrShredded is returned for a subject whose key was shredded: its data is
// gone for good. A shredded subject never gets a key again.
var ErrShredded = errors.New("data key shredded")

// ErrNotFound is returned by DataKey with create=false when the subject has
// no key and was never shredded.
var ErrNotFound = errors.New("data key not found")

// Vault stores per-subject data keys for crypto-shredding.
//
// A subject is identified by (shop, subject): the shop's own key uses the
// shop id as subject; a customer's key uses the customer id. Methods are
// safe for concurrent use and honour ctx.
type Vault interface {
	// DataKey returns the subject's data key. When the subject has none and
	// create is true, a new random key is made and stored durably before it
	// is returned; concurrent callers creating the same subject all get the
	// same key. Returns ErrShredded for a shredded subject (even with
	// create), ErrNotFound when there is no key and create is false.
	// Empty, over-long, non-UTF-8 or NUL-containing ids get ErrInvalidID.
	DataKey(ctx context.Context, shop, subject string, create bool) ([]byte, error)

	// Shred deletes the subject's key for good and remembers that it was
	// shredded. Idempotent; shredding a subject that never had a key
	// records the tombstone too.
	Shred(ctx context.Context, shop, subject string) error

	// ShredShop shreds the shop's key and every key of its subjects. The
	// shop's tombstone also covers subjects asked for later: they get
	// ErrShredded too.
	ShredShop(ctx context.Context, shop string) error

	// Close releases resources.
	Close() error
}
