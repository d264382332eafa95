package sqlite

import "github.com/cgp-platform/cgp/vault/internal/wrapstore"

// Creates returns the create batcher, for the tests that watch its queue.
func (v *Vault) Creates() *wrapstore.Creator { return v.keys.Creates }

// HoldWrites takes the in-process write lock, as a shred does, and returns
// the function that releases it.
func (v *Vault) HoldWrites() (release func()) {
	v.write.Lock()
	return v.write.Unlock
}
