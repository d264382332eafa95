package versioned

import (
	"context"
	"errors"

	"github.com/cgp-platform/cgp/eventlog"
)

// Store keeps versioned tables and the checkpoints of the projectors that
// write them.
//
// Every method is safe for concurrent use and honours ctx. Errors are
// wrapped with the table or projector concerned; ErrInvalid is matched by
// a call whose arguments break the rules below (unknown table, a value of
// the wrong type, a malformed query).
type Store interface {
	// Migrate creates the tables that do not exist yet. It is idempotent:
	// a table that exists is left as it is (a changed table is a new table
	// under a new name, filled by a replay). The tables are known to the
	// store afterwards; every other method refuses a table it does not
	// know.
	Migrate(ctx context.Context, tables []Table) error

	// Write queues changes made by projector at log position pos (above
	// 0). A change's Row.Version of 0 means pos. Nothing is readable and
	// projector's checkpoint does not move until the batch holding the
	// rows has been sent durably (on Flush, or earlier when a batch is full
	// or old enough); the checkpoint then moves to the highest pos whose
	// changes, and those of every earlier Write of projector, were all
	// sent. A Write without changes only moves the checkpoint. Write
	// validates the rows and fails without queueing any when one is
	// invalid.
	Write(ctx context.Context, projector string, pos eventlog.Position, changes []Change) error

	// Flush sends every queued row, then saves the checkpoints that moved.
	// When a send fails, the rows not yet sent stay queued and the
	// checkpoints stay where they were; a later Flush sends them again,
	// once (a batch keeps its composition across retries).
	Flush(ctx context.Context) error

	// Checkpoint returns projector's saved checkpoint, 0 before the first.
	Checkpoint(ctx context.Context, projector string) (eventlog.Position, error)

	// Get returns the newest version of the row with key (values of the
	// table's key columns, in Key order); found is false when there is
	// none or the newest version is a tombstone.
	Get(ctx context.Context, table string, key []any) (row Row, found bool, err error)

	// Scan returns up to q.Limit rows (newest versions, tombstones left
	// out) whose key starts with q.Prefix, ordered by the whole key,
	// ascending or, with q.Desc, descending, starting after q.After
	// (keyset: a row inserted before the cursor is never returned later,
	// no row is returned twice).
	Scan(ctx context.Context, table string, q Query) ([]Row, error)

	// Erase makes every row whose key starts with prefix (at least one
	// value) unreadable for good: queued rows are sent, a tombstone at
	// version pos is written for every such key, and the stored versions
	// older than pos are deleted physically. A later write of an older
	// version (a redelivery) stays hidden; a newer one is readable.
	Erase(ctx context.Context, table string, prefix []any, pos eventlog.Position) error

	// Close sends nothing: it stops background sending and releases the
	// store. Rows queued and not flushed are dropped (their projectors'
	// checkpoints did not move, so they are written again on restart).
	Close() error
}

// Change is one row written to one table.
type Change struct {
	Table string
	Row   Row
}

// Row is a whole row: the values of every column of its table, in column
// order. A tombstone (Deleted) keeps its key values; its other values are
// replaced by their zero values when written, so no erased data is kept.
type Row struct {
	Values []any
	// Version is the global log position that produced the row. The
	// newest version of a key wins; an older one never replaces it.
	Version uint64
	// Deleted marks a tombstone: the key reads as absent.
	Deleted bool
}

// Query selects rows of one table by key; see Store.Scan.
type Query struct {
	// Prefix holds the values of the first len(Prefix) key columns.
	Prefix []any
	// After, when not empty, holds a whole key (the last one of the
	// previous page): only keys after it (before it, with Desc) are
	// returned.
	After []any
	// Limit is the page size, 1 to MaxLimit.
	Limit int
	// Desc orders by key descending.
	Desc bool
}

// MaxLimit bounds Query.Limit.
const MaxLimit = 10000

// ErrInvalid is matched by an error caused by the caller's arguments.
var ErrInvalid = errors.New("invalid versioned-store request")
