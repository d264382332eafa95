package postgres

import "github.com/cgp-platform/cgp/vault/internal/wrapstore"

// Creates returns the create batcher, for the tests that watch its queue.
func (v *Vault) Creates() *wrapstore.Creator { return v.keys.Creates }
