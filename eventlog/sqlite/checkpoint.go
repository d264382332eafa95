package sqlite

import (
	"context"
	"errors"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// Checkpointing (see doc.go). The writer's connection has SQLite's
// auto-checkpoint turned off: run inside a COMMIT, it stalled the writer
// (and so every append) for the whole copy of the WAL into the database
// and its two fsyncs. Instead the writer reads the WAL's size after each
// commit (a NOOP checkpoint, which only reads the WAL index) and, past
// checkpointFrames, wakes the checkpointer goroutine, which copies the WAL
// into the database on a connection of its own (PASSIVE: it never blocks
// the writer) while the writer goes on appending.
//
// Such a checkpoint cannot catch up with a writer that never pauses, and
// SQLite writes the WAL from its beginning again (a restart, which bounds
// its size) only when a write transaction begins with every frame copied.
// So after its passes the checkpointer asks the writer to copy the tail
// itself, between a COMMIT and the next BEGIN; that copy reaches the end
// of the WAL, so SQLite fsyncs the database file after it (a PASSIVE
// checkpoint that stops short of the end does not), and the writer's next
// commit restarts the WAL. The writer thus still pays one fsync of the
// WAL and one of the database per cycle, but not the copying.
const (
	// checkpointFrames is the number of WAL frames (pages) not yet copied
	// into the database past which the checkpointer starts: 32 MB with
	// 4 KB pages. The larger, the rarer the writer's fsync of the
	// database file in the tail copy (its cost grows slower than the WAL).
	checkpointFrames = 8000
	// tailFrames is the number of frames left to copy at which the
	// checkpointer stops its passes and hands the tail to the writer.
	tailFrames = 256
	// checkpointPasses bounds the checkpointer's passes per wake-up.
	checkpointPasses = 4
)

// runCheckpointer is the checkpointer goroutine: woken by the writer, it
// runs PASSIVE checkpoints on its own connection until few frames are left
// to copy, then asks the writer for the tail. It exits when the log closes.
// A checkpoint that fails with an I/O error fails the log closed (it
// fsyncs the WAL and may have written to the database file); when another
// connection holds the checkpoint lock, it tries again on the next wake-up.
func (l *Log) runCheckpointer() {
	defer close(l.ckptDone)
	ctx := context.Background()
	for {
		select {
		case <-l.done:
			return
		case <-l.ckptWake:
		}
		tail := true
		for range checkpointPasses {
			var busy, frames, copied int64
			err := l.ckptConn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
			if err != nil {
				if isIOError(err) {
					_ = l.failClosed("checkpoint", err)
				}
				tail = false
				break
			}
			if busy != 0 || frames < 0 {
				tail = false
				break
			}
			if frames-copied <= tailFrames {
				break
			}
		}
		// Even when the passes could not keep up, the tail is what the
		// writer added during the last one: bounded.
		l.tailWanted.Store(tail)
		l.ckptActive.Store(false)
	}
}

// afterCommit runs on the writer between a COMMIT and the next BEGIN: it
// copies the WAL's tail when the checkpointer asked for it, and wakes the
// checkpointer when the WAL holds checkpointFrames frames not yet copied.
func (w *writer) afterCommit() {
	if w.l.tailWanted.Swap(false) {
		if _, err := w.queryRow(w.checkpoint); err != nil && isIOError(err) {
			_ = w.l.failClosed("checkpoint", err)
			return
		}
	}
	found, err := w.queryRow(w.walInfo)
	if err != nil || !found {
		return // looked at again after the next commit
	}
	frames, _ := w.dest[1].(int64)
	copied, _ := w.dest[2].(int64)
	if frames-copied >= w.l.cfg.checkpointFrames && w.l.ckptActive.CompareAndSwap(false, true) {
		w.l.ckptWake <- struct{}{} // never blocks: ckptActive admits one wake-up at a time
	}
}

// isIOError reports whether err is a SQLite I/O error (a failed read,
// write or fsync).
func isIOError(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrIoErr
}
