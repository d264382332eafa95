// Package postgres is the vault.Vault adapter for PostgreSQL, used at scale:
// data keys wrapped by the master key (vault.Wrap) in one schema, with
// tombstones for shredded subjects and shops, shared safely by any number of
// processes.
//
// Tables (created when missing, under an advisory lock so that processes
// starting together do not race): vault_meta (the master-key check value),
// shops (one row per shop seen; shredded_at set by ShredShop) and data_keys
// (one row per subject: the wrapped key, or NULL and shredded_at once
// shredded). Creation is INSERT … ON CONFLICT DO NOTHING then SELECT, under
// a shared lock on the shop's row that ShredShop must take exclusively, so a
// key is never created beside a tombstone.
//
// Unlike the SQLite adapter, PostgreSQL cannot promise that a shredded
// wrapped key's bytes leave the disk at once: MVCC keeps the old row version
// until VACUUM reclaims it (without zeroing it), and the WAL, its archives
// and backups keep copies. What protects those copies is the wrapping: a
// wrapped key is useless without the master key, which never reaches the
// database. Keep the master key out of database backups.
//
// It imports the standard library, vault, and github.com/jackc/pgx/v5.
package postgres
