// Package wrapstore is the DataKey algorithm shared by the vault adapters
// that store data keys wrapped by the master key (vault.Wrap) and create
// them through a group-commit batch.Batcher: read the subject's row first;
// when it has no key and create is set, wrap a new random key and hand it
// to the adapter's batch, which stores it or finds the key or tombstone
// that came first. The adapters supply the look-up and the batch's commit;
// the answers, errors and their wrapping are the same for all of them.
//
// It imports the standard library, vault and vault/internal/batch.
package wrapstore
