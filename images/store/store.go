package store

import (
	"context"
	"io"
	"regexp"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// DefaultRetention is how long a result is kept before Sweep removes it.
const DefaultRetention = 30 * 24 * time.Hour

// MaxNameLen is the longest shop id or key accepted.
const MaxNameLen = 128

// Store keeps image-operation results, one blob per shop and key.
//
// Shops and keys are names of [A-Za-z0-9_-] of at most MaxNameLen bytes;
// any other is refused with a *domain.Error (CodeInvalid, Field "shop" or
// "key") before the storage is touched, so a name can never reach outside
// the shop's space. Every method is safe for concurrent use; Puts of the
// same key race and the last one to finish wins, whole. Every method
// returns ctx.Err() (wrapped) when ctx is done before it starts its work.
type Store interface {
	// Put stores everything r yields under (shop, key), replacing any
	// earlier blob atomically: a reader sees the old blob or the new one,
	// never part of one. It returns the SHA-256 of the bytes (lowercase
	// hex) and their count. When r fails or ctx ends, nothing is stored
	// and an earlier blob stays.
	Put(ctx context.Context, shop, key string, r io.Reader) (digest string, size int64, err error)
	// Get opens the blob under (shop, key); the caller closes it. A
	// missing blob is a *domain.Error with CodeNotFound.
	Get(ctx context.Context, shop, key string) (io.ReadCloser, error)
	// Delete removes the blob under (shop, key); a missing blob is not an
	// error.
	Delete(ctx context.Context, shop, key string) error
	// DeleteShop removes every blob of shop. A shop without blobs is not
	// an error.
	DeleteShop(ctx context.Context, shop string) error
	// Sweep removes every blob stored before olderThan, in every shop, and
	// returns how many it removed.
	Sweep(ctx context.Context, olderThan time.Time) (int, error)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ValidName reports whether s may be used as a shop id or key.
func ValidName(s string) bool {
	return len(s) <= MaxNameLen && nameRE.MatchString(s)
}

// CheckShop returns the *domain.Error (field "shop") an adapter answers
// for an invalid shop id, or nil.
func CheckShop(shop string) error {
	if !ValidName(shop) {
		return domain.Invalid("shop", "must be 1 to %d characters of A-Z, a-z, 0-9, _ and -", MaxNameLen)
	}
	return nil
}

// CheckKey returns the *domain.Error (field "key") an adapter answers for
// an invalid key, or nil.
func CheckKey(key string) error {
	if !ValidName(key) {
		return domain.Invalid("key", "must be 1 to %d characters of A-Z, a-z, 0-9, _ and -", MaxNameLen)
	}
	return nil
}
