package wrapstore

import (
	"context"
	"fmt"

	"github.com/cgp-platform/cgp/vault"
	"github.com/cgp-platform/cgp/vault/internal/batch"
)

// CreateRequest is one creating DataKey call's new key, queued for the
// adapter's create batch.
type CreateRequest struct {
	Shop, Subject string
	// Fresh is the caller's new key, wrapped; the batch stores it if the
	// subject has neither a key nor a tombstone and its shop is not
	// shredded.
	Fresh []byte
}

// CreateResult is the create batch's answer to one CreateRequest.
type CreateResult struct {
	// Wrapped is the subject's stored key: the request's own Fresh one when
	// Inserted, else the key found, or created first in the same batch;
	// nil when Shredded.
	Wrapped []byte
	// Inserted is set when the batch stored the request's Fresh key.
	Inserted bool
	// Shredded is set when the subject or its shop is shredded.
	Shredded bool
}

// Creator is the group-commit queue of an adapter's creates.
type Creator = batch.Batcher[CreateRequest, CreateResult]

// Store is an adapter's storage of wrapped keys, as DataKey uses it.
type Store struct {
	// Master wraps and unwraps the data keys: vault.MasterKeySize bytes.
	Master []byte
	// Lookup reads the subject's wrapped key (nil when it has none) and
	// whether the subject or its shop is shredded, from one snapshot.
	Lookup func(ctx context.Context, shop, subject string) (wrapped []byte, shredded bool, err error)
	// Creates stores new keys; see CreateRequest.
	Creates *Creator
}

// DataKey implements vault.Vault.DataKey: it validates the ids, looks the
// subject up, and when it has no key and create is set, queues a new
// wrapped key on Creates. A caller whose request the batch inserted gets
// its own new key back; one that lost to a concurrent creator gets that
// creator's key, unwrapped.
func (s *Store) DataKey(ctx context.Context, shop, subject string, create bool) ([]byte, error) {
	if err := vault.ValidateID(shop, subject); err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	wrapped, shredded, err := s.Lookup(ctx, shop, subject)
	if err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	switch {
	case shredded:
		return nil, vault.ErrShredded
	case wrapped != nil:
		return s.unwrap(shop, subject, wrapped)
	case !create:
		return nil, vault.ErrNotFound
	}

	key := vault.NewKey()
	fresh, err := vault.Wrap(s.Master, shop, subject, key)
	if err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	// The batch looks again as it writes: another writer may have created
	// or shredded the subject since the read above.
	res, err := s.Creates.Do(ctx, CreateRequest{Shop: shop, Subject: subject, Fresh: fresh})
	switch {
	case err != nil:
		return nil, fmt.Errorf("create data key: %w", err)
	case res.Shredded:
		return nil, vault.ErrShredded
	case res.Inserted:
		return key, nil
	}
	return s.unwrap(shop, subject, res.Wrapped)
}

func (s *Store) unwrap(shop, subject string, wrapped []byte) ([]byte, error) {
	key, err := vault.Unwrap(s.Master, shop, subject, wrapped)
	if err != nil {
		return nil, fmt.Errorf("data key: %w", err)
	}
	return key, nil
}
