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
// Creating keys is group-committed, since a burst of webhooks about new
// customers creates thousands per second. DataKey first reads, on any pooled
// connection; when the subject has no key and create is set, it queues its
// new wrapped key for a writer goroutine with a connection of its own. That
// goroutine takes everything queued (up to 512 requests) into one BEGIN
// IMMEDIATE transaction: one INSERT … SELECT … FROM (VALUES …) stores the
// keys of subjects that have neither a key nor a tombstone nor a shredded
// shop, the others are looked up again, and one COMMIT (synchronous=FULL,
// so one fsync) makes the batch durable before any caller is answered.
// Requests for one subject in one batch get the same key. Shred and
// ShredShop take the same in-process write lock as the batch (and hold it
// through their WAL checkpoint), so a shred runs between batches, never
// inside one.
//
// Against shreds, the guarantee is this: DataKey returns a key only if that
// key was committed before any shred of its subject or shop, which then
// deleted it. A DataKey call that begins after Shred or ShredShop has
// returned therefore gets ErrShredded; one that overlaps the shred may
// return the key the shred deleted, as a read just before it would, but
// never a key created after it.
//
// A caller whose ctx ends while it waits returns ctx.Err() at once. Its key
// is created if its batch had already started, not otherwise; a later
// DataKey returns it if it was. Close answers every queued create, then
// stops the writer goroutine and closes the database. Stats counts the
// batches.
//
// Every connection keeps a few prepared statements (_stmt_cache_size), so
// that the look-up and the batch insert are not parsed again on each call.
//
// The create queue itself is vault/internal/batch (holding the write lock
// around each batch), and the DataKey flow around it is
// vault/internal/wrapstore, shared with the PostgreSQL adapter; this
// package supplies the look-up and the batch's transaction.
//
// It imports the standard library, vault, vault/internal/batch,
// vault/internal/wrapstore, and internal/sqlitedb (mattn/go-sqlite3).
package sqlite
