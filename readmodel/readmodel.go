package readmodel

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
)

// Migration is one step of a projector's schema. Versions start at 1 and
// increase; a migration, once released, never changes (add a new one).
type Migration struct {
	Version int
	// SQL may hold several statements; it runs in one transaction with
	// the record of the version.
	SQL string
}

// ValidateMigrations checks that versions are positive and strictly
// increasing.
func ValidateMigrations(migs []Migration) error {
	prev := 0
	for i, m := range migs {
		if m.Version <= prev {
			return fmt.Errorf("migration %d: version %d must be above %d", i, m.Version, prev)
		}
		prev = m.Version
	}
	return nil
}

// ParkedEvent is an event a projector gave up on: its checkpoint moved
// past it. It names the event and the failure, never the payload.
type ParkedEvent struct {
	Projector string
	Position  eventlog.Position
	EventID   uuid.UUID
	Stream    string
	Type      string
	// Error is the failure's text, cut to MaxParkedErrorLen bytes.
	Error    string
	ParkedAt time.Time
}

// MaxParkedErrorLen bounds the error text kept for a parked event.
const MaxParkedErrorLen = 4096

// ErrMigrationHistory is matched by a Migrate whose recorded history does
// not match the migrations given (one was removed or inserted before an
// applied one). Read models can be rebuilt: drop the store and replay.
var ErrMigrationHistory = errors.New("read-model migration history does not match")

// Store keeps read models and the checkpoints of their projectors.
//
// Every method is safe for concurrent use and honours ctx. Writes are
// serialised; a projector's writes go through Apply or Park only, so its
// rows and checkpoint never disagree.
type Store interface {
	// Migrate brings projector's tables up to date: it runs, in order and
	// each in its own transaction, the migrations whose versions are not yet
	// recorded for projector. It fails when the versions are not strictly
	// increasing, or with ErrMigrationHistory when the recorded versions
	// are not a prefix of migs.
	Migrate(ctx context.Context, projector string, migs []Migration) error

	// Apply runs fn and sets projector's checkpoint to pos in one
	// transaction. When the checkpoint is already at or past pos it does
	// nothing and reports applied=false (redelivery under at-least-once).
	// When fn fails, nothing is written and its error is returned
	// wrapped. pos must be above 0.
	Apply(ctx context.Context, projector string, pos eventlog.Position, fn func(tx *sql.Tx) error) (applied bool, err error)

	// Maintain runs fn in one write transaction that moves no checkpoint:
	// upkeep of rows that depend on the clock rather than on events (a
	// projector's Upkeep). When fn fails, nothing is written.
	Maintain(ctx context.Context, fn func(tx *sql.Tx) error) error
	// Checkpoint returns projector's checkpoint: the position of the last
	// event applied or parked, 0 before the first.
	Checkpoint(ctx context.Context, projector string) (eventlog.Position, error)

	// Park records that projector gave up on e because of cause, and moves
	// its checkpoint to e.Position (never backwards), in one transaction.
	// Parking the same event again is a no-op.
	Park(ctx context.Context, projector string, e eventlog.Event, cause error) error

	// Parked lists projector's parked events in position order.
	Parked(ctx context.Context, projector string) ([]ParkedEvent, error)

	// DB is the pool for read-model queries. Writing through it is not
	// allowed (an adapter may refuse).
	DB() *sql.DB

	// Close releases the store.
	Close() error
}
