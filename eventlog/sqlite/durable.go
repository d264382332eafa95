package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// syncQueue is the capacity of the writer-to-syncer channel: how many
// committed batches may wait for an fsync before the writer blocks.
const syncQueue = 64

// syncJob is a committed batch waiting for the fsync that makes it durable,
// or a failed one that held the read cap and is answered after an fsync too
// (see writer.abort).
type syncJob struct {
	reqs    []*request
	answers []response
	// floor is the first position the batch's transaction inserted (0
	// when it inserted nothing); readers of this process are capped below
	// it until the job is synced.
	floor int64
}

// runSyncer is the syncer goroutine. It takes every committed batch queued
// by the writer, fsyncs the write-ahead log once for all of them, then
// lifts the read cap above them, wakes the subscriptions and answers their
// callers. A failed fsync fails the log closed (see failClosed). It exits
// when the writer has closed syncs and every queued batch is answered.
func (l *Log) runSyncer() {
	defer close(l.syncerDone)
	var jobs []syncJob
	for {
		j, ok := <-l.syncs
		if !ok {
			return
		}
		jobs = append(jobs[:0], j)
	drain:
		for {
			select {
			case j, ok := <-l.syncs:
				if !ok {
					break drain // answered below; the next receive returns
				}
				jobs = append(jobs, j)
			default:
				break drain
			}
		}
		l.syncJobs(jobs)
		clear(jobs)
	}
}

// syncJobs makes jobs durable with one fsync and answers them.
func (l *Log) syncJobs(jobs []syncJob) {
	err := l.failure()
	if err == nil {
		if err = l.syncWAL(); err != nil {
			err = l.failClosed("fsync write-ahead log", err)
		}
	}
	if err == nil {
		floors := 0
		for _, j := range jobs {
			if j.floor != 0 {
				floors++
			}
		}
		l.vis.release(floors)
		l.stats.syncs.Add(1)
		// Before the answers: an appender that reads right after its
		// Append returned must find its events.
		l.changed.Notify()
	}
	// Let the writer commit its next batch while the answers go out.
	l.inSync.Add(-int64(len(jobs)))
	select {
	case l.synced <- struct{}{}:
	default: // a signal is pending already
	}
	for _, j := range jobs {
		for i, r := range j.reqs {
			resp := j.answers[i]
			if err != nil {
				resp = response{err: err}
			}
			r.done <- resp
		}
	}
}

// syncWAL fsyncs the write-ahead log through the test hook when one is set.
func (l *Log) syncWAL() error {
	if l.cfg.syncHook != nil {
		return l.cfg.syncHook(l.wal.sync)
	}
	return l.wal.sync()
}

// failure returns the error the log failed closed with, nil while healthy.
func (l *Log) failure() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// failClosed records that op (an fsync, or a checkpoint, which fsyncs)
// failed and returns the error every waiting and later append gets (the
// first failure's, when there were several). After a failed fsync the
// kernel may have dropped the dirty pages it could not write and marked
// them clean, so a retry that succeeds would prove nothing: the log stops
// taking appends for good (fail closed) until it is reopened.
func (l *Log) failClosed(op string, cause error) error {
	err := unavailable(op+" failed; the log takes no more appends until reopened", cause)
	l.failed.CompareAndSwap(nil, &err)
	return l.failure()
}

// walFile fsyncs the SQLite write-ahead log of the database through a
// descriptor of its own. Only the syncer goroutine uses it once Open has
// returned. (Closing a descriptor of the database file itself would drop
// SQLite's POSIX locks on it; SQLite takes none on the WAL file.)
type walFile struct {
	path string // <database>-wal, next to the database file SQLite resolved
	f    *os.File
	info fs.FileInfo // identity of f
	// dirSynced is false while the directory entry of f may not be
	// durable yet (f was created since the directory was last synced).
	dirSynced bool
}

func newWALFile(dbFile string) *walFile {
	return &walFile{path: dbFile + "-wal"}
}

// sync makes every frame written to the write-ahead log so far durable.
//
// It fsyncs the file found at the WAL's path, reopening it when SQLite has
// replaced it since the last call (another inode: the WAL was deleted,
// after a checkpoint that synced the database, and created anew). A restart
// of the WAL (SQLite writing from its start again once a checkpoint copied
// every frame into the database) keeps the file, and the one fsync covers
// the rewritten header and frames. When no WAL file exists, there is
// nothing to sync: SQLite deletes it only after checkpointing it whole
// into a synced database file. The first fsync of each file is followed by
// an fsync of its directory, so that a WAL just created survives a crash
// (SQLite itself does so only at its own first sync of the WAL, which with
// synchronous=NORMAL comes only at a checkpoint).
func (w *walFile) sync() error {
	info, err := os.Stat(w.path)
	if errors.Is(err, fs.ErrNotExist) {
		w.closeFile()
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat %s: %w", w.path, err)
	}
	if w.f == nil || !os.SameFile(info, w.info) {
		w.closeFile()
		f, err := os.OpenFile(w.path, os.O_RDWR, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted between the stat and the open: see above
		}
		if err != nil {
			return fmt.Errorf("open %s: %w", w.path, err)
		}
		if w.info, err = f.Stat(); err != nil {
			_ = f.Close()
			return fmt.Errorf("stat %s: %w", w.path, err)
		}
		w.f = f
		w.dirSynced = false
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", w.path, err)
	}
	if !w.dirSynced {
		if err := syncDir(filepath.Dir(w.path)); err != nil {
			return err
		}
		w.dirSynced = true
	}
	return nil
}

func (w *walFile) closeFile() {
	if w.f != nil {
		_ = w.f.Close() // the descriptor only fsyncs: closing it loses nothing
		w.f = nil
		w.info = nil
	}
}

func (w *walFile) close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// visibility caps what the reads of this process see: never an event of a
// batch this process committed but has not yet fsynced. The batches in
// flight occupy the highest positions (positions grow in commit order), so
// the cap is just below the first of them, and everything under it is
// either durable or was appended by another process (whose own log
// answers for it).
type visibility struct {
	mu sync.Mutex
	// floors holds the first position of every batch whose transaction
	// inserted events and that is not synced yet, in commit order.
	floors []int64
	// limit is the highest visible position: floors[0]-1, or MaxInt64.
	limit atomic.Int64
}

func newVisibility() *visibility {
	v := &visibility{}
	v.limit.Store(math.MaxInt64)
	return v
}

// max returns the highest position readers may see now.
func (v *visibility) max() int64 { return v.limit.Load() }

// hold registers a batch whose transaction inserted its first event at
// first. The writer calls it before COMMIT, so no reader can see the batch
// before the cap covers it.
func (v *visibility) hold(first int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.floors = append(v.floors, first)
	if len(v.floors) == 1 {
		v.limit.Store(first - 1)
	}
}

// release lifts the cap above the oldest n held batches, now durable.
func (v *visibility) release(n int) {
	if n == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	// A handful of batches at most are in flight: shift them down.
	v.floors = v.floors[:copy(v.floors, v.floors[min(n, len(v.floors)):])]
	if len(v.floors) == 0 {
		v.limit.Store(math.MaxInt64)
		return
	}
	v.limit.Store(v.floors[0] - 1)
}
