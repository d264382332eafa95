// Package sqlite is the embedded event-log adapter: an eventlog.Log kept in
// one SQLite file in WAL mode, shared safely by several processes. It owns
// the log's schema (versioned, append-only: triggers reject every UPDATE and
// DELETE), the group-commit writer that batches concurrent appends into one
// transaction, the syncer that makes committed batches durable, the
// checkpointer, the pool of read connections, and catch-up subscriptions
// woken by this process's durable commits and by a cheap data_version check
// for commits of other processes.
//
// # Durability protocol
//
// An Append returns only once its events are on disk. The work is split
// between three goroutines so that the fsync of one batch overlaps the SQL
// work of the next:
//
//  1. The writer (one connection, synchronous=NORMAL, so COMMIT writes the
//     batch's pages to the write-ahead log <file>-wal without fsyncing it)
//     runs one transaction per batch of queued appends. Before the COMMIT
//     it registers the batch's first position as a read cap (see below).
//     After the COMMIT it hands the batch to the syncer and starts the next
//     one at once, taking every request that arrives while the syncer is
//     busy; it commits that batch when the syncer is idle (or when nothing
//     is queued and the batch holds 16 events, or at MaxBatch events).
//  2. The syncer takes every committed batch not yet synced and fsyncs the
//     WAL file once for all of them (os.File.Sync on a descriptor of its
//     own; it reopens the file when SQLite replaced it, fsyncs the
//     directory after the first fsync of each file, and has nothing to do
//     when no WAL file exists, as SQLite deletes it only after copying it
//     whole into a synced database file). Only then does it lift the read
//     cap above those batches, wake the subscriptions and answer the
//     callers. Every answer waits for that fsync, also a wrong-revision
//     error or the result of a repeated append: they report a state that
//     is not durable before it.
//  3. One fsync covers every batch committed before it: a later commit's
//     frames lie after the earlier ones in the WAL, or, when SQLite
//     restarted the WAL (writing it from its beginning again), the earlier
//     frames were first copied into the database file and that file was
//     fsynced (a checkpoint fsyncs the WAL before copying it and the
//     database after, with synchronous=NORMAL too). A crash of the process
//     alone loses nothing that was committed (it is in the operating
//     system's cache); an operating-system crash or a power loss loses at
//     most the batches committed but not yet acknowledged.
//
// A failed fsync fails the log closed: the kernel may have dropped the pages
// it could not write and marked them clean, so a later fsync that succeeds
// would prove nothing. Every append waiting on that fsync or queued behind
// it, and every later Append or SetStreamMetadata, fails with an error
// wrapping eventlog.ErrUnavailable until the log is closed and reopened
// (after the storage is repaired). Reads go on working and never show the
// failed batches; after a reopen their events may or may not be present,
// as for any append that returned an error. A checkpoint failing with an
// I/O error fails the log closed the same way.
//
// Close stops taking appends, commits and fsyncs every append queued before
// it, answers them, and then closes the connections.
//
// # What readers see
//
// In this process, ReadAll, ReadStream, HeadPosition and subscriptions never
// show an event before it is durable: reads are capped below the oldest
// batch committed but not yet fsynced (positions grow in commit order, so
// everything below the cap is durable or was appended by another process),
// the cap is read again after each query to drop what a batch committed in
// between added, and subscriptions are woken only after the fsync.
// StreamMetadata is not capped: a metadata write may be read a moment
// before it is durable.
//
// Another process reading the same file sees a batch as soon as it is
// committed, a moment (one fsync, typically under a millisecond) before the
// writing process has fsynced it; only an operating-system crash or a power
// loss in that window would take back an event such a reader has already
// seen. Events that other processes append are their own log's
// responsibility in the same way: this process shows them as soon as they
// are committed, below its own cap.
//
// # Checkpoints
//
// The writer's SQLite auto-checkpoint is off: run inside a COMMIT, it
// stalled every append for the copy of the WAL into the database and two
// fsyncs. The writer reads the WAL's size after each commit and, past 8000
// frames (32 MB), wakes a checkpointer goroutine that copies the WAL into
// the database on its own connection (PASSIVE checkpoints: the writer is
// never blocked) while appends go on. Because SQLite restarts the WAL only
// when a write transaction begins with every frame copied, the writer then
// copies the remaining tail itself between a COMMIT and the next BEGIN (one
// fsync of the WAL and one of the database), and its next commit restarts
// the WAL, which keeps it bounded (readers holding old snapshots can delay
// a restart, as with SQLite's own checkpoints).
//
// It imports the standard library, github.com/google/uuid,
// github.com/mattn/go-sqlite3 (cgo) and the eventlog port.
package sqlite
