// Package vault is the port of the key vault that makes crypto-shredding
// possible: one 256-bit data key per shop and per customer, stored wrapped
// (AES-256-GCM) by a master key, and deleted for good on erasure. Adapters:
// vault/sqlite (embedded, secure_delete) and vault/postgres (at scale). The
// contract every adapter passes lives in vault/vaulttest. The two adapters
// share their group-commit create queue (vault/internal/batch) and the
// DataKey flow around it (vault/internal/wrapstore).
//
// It imports only the standard library.
package vault
