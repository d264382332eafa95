// Package sqlite is the embedded vault.Vault adapter: data keys wrapped by
// the master key (vault.Wrap) in one SQLite file, with tombstones for
// shredded subjects and shops.
//
// Erasure is physical, not only logical. Every connection runs with
// secure_delete=ON, so SQLite overwrites a deleted row's bytes with zeros in
// its page, and temp_store=MEMORY, so no temporary file holds a copy. The
// journal is a WAL; after each Shred and ShredShop the vault runs
// wal_checkpoint(TRUNCATE), which copies the zeroed pages into the database
// file and cuts the WAL to zero bytes, so no older page image holding the
// wrapped key is left in it. The package's tests search every byte of every
// file in the directory to prove it.
//
// VACUUM is not run on shred: it rewrites the whole database under an
// exclusive lock (time and extra disk space grow with the number of keys),
// and secure_delete already leaves no deleted bytes in the file. What remains
// outside SQLite's reach — copies in file-system journals, snapshots and
// backups, blocks freed when the WAL is truncated — is protected only by the
// wrapping: without the master key a wrapped key is useless.
//
// It imports the standard library, vault, and github.com/mattn/go-sqlite3.
package sqlite
