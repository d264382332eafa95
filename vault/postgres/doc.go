// Package postgres is the vault.Vault adapter for PostgreSQL, used at scale:
// data keys wrapped by the master key (vault.Wrap) in one schema, with
// tombstones for shredded subjects and shops, shared safely by any number of
// processes.
//
// Tables (created when missing, under an advisory lock so that processes
// starting together do not race): vault_meta (the master-key check value),
// shops (one row per shop seen; shredded_at set by ShredShop) and data_keys
// (one row per subject: the wrapped key, or NULL and shredded_at once
// shredded).
//
// Creating keys is group-committed: DataKey reads first, on the pool; when
// the subject has no key and create is set, it queues its new wrapped key
// for a goroutine with a one-connection pool of its own, which takes
// everything queued (up to 512 requests) into one transaction of four
// statements sent in one pipeline: record the shops, lock their rows shared
// (ShredShop takes its shop's row exclusively, so it waits for the batch
// and then deletes its keys), INSERT … SELECT FROM unnest(…) ON CONFLICT DO
// NOTHING for subjects of shops not shredded, and one SELECT reading back
// what is stored: ours, a concurrent creator's, or a tombstone. A key is
// never created beside a tombstone, rows are taken in (shop, subject)
// order so that concurrent batches cannot deadlock, and no caller is
// answered before the commit. A caller whose ctx ends while it waits
// returns ctx.Err() at once (its key may or may not be created; a later
// DataKey returns it if it was). Close answers every queued create before
// it closes the pools. A DataKey call that begins after Shred or ShredShop
// returned gets ErrShredded; one that overlaps it may return the key the
// shred deleted, never a key created after it.
//
// Unlike the SQLite adapter, PostgreSQL cannot promise that a shredded
// wrapped key's bytes leave the disk at once: MVCC keeps the old row version
// until VACUUM reclaims it (without zeroing it), and the WAL, its archives
// and backups keep copies. What protects those copies is the wrapping: a
// wrapped key is useless without the master key, which never reaches the
// database. Keep the master key out of database backups.
//
// The create queue itself is vault/internal/batch, and the DataKey flow
// around it (read, wrap a new key, queue it, interpret the answer) is
// vault/internal/wrapstore, shared with the SQLite adapter; this package
// supplies the look-up and the batch's transaction.
//
// It imports the standard library, vault, vault/internal/batch,
// vault/internal/wrapstore, and github.com/jackc/pgx/v5.
package postgres
