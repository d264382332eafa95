package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/readmodel"
)

// Projector folds events into read-model tables it owns.
type Projector struct {
	// Name identifies the projector for good: its checkpoint, migration
	// history and parked events are kept under it, and metrics carry it.
	// Lowercase letters, digits, '.', '_' and '-', starting with a letter.
	// Renaming a projector rebuilds it from the start of the log.
	Name string
	// Migrations create and evolve the projector's tables; Run applies the
	// pending ones before the projector starts.
	Migrations []readmodel.Migration
	// Handle applies one event inside the transaction that also moves the
	// checkpoint. It sees every event of the log, in order, and ignores
	// the types it does not fold. It must use tx for every read and write,
	// and must not keep e.Data beyond the call. A returned error (or a
	// panic) is retried, then the event is parked.
	Handle func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error
	// HandleBatch, when set, is used by the runtime instead of Handle: it
	// applies several consecutive events (those of one store transaction,
	// at most Config.Batch) in one call, so a projector can fold them in
	// memory and write each row it changes once. The rules of Handle hold
	// for each event. When it fails for a batch of several events, the
	// runtime applies them again one per call, so that the failing event
	// alone is retried and parked. Handle stays required: it is the
	// one-event form (HandleBatch with one event, typically).
	HandleBatch func(ctx context.Context, tx *sql.Tx, events []eventlog.Event) error
	// Types, when set, are the only event types Handle folds: the runtime
	// passes over the others without a transaction, and persists the
	// checkpoint they moved in the background (FlushInterval). Nil means
	// every event goes to Handle.
	Types []string
	// Committed, when set, is called after the transaction that applied e
	// committed (not for events skipped as already applied), so caches in
	// front of the read model can drop what e changed. It must be quick and
	// must not fail.
	Committed func(e eventlog.Event)
	// Upkeep, when set, keeps rows that depend on the clock rather than
	// on events (a customer's lifecycle stage as time passes). The runtime
	// runs it through Store.Maintain, with its clock's now, once Run has
	// migrated the tables and then every UpkeepEvery until Run returns;
	// a failure is logged and tried again at the next tick. It must use
	// tx for every read and write, and be idempotent.
	Upkeep func(ctx context.Context, tx *sql.Tx, now time.Time) error
	// UpkeepEvery is how often Upkeep runs. Default DefaultUpkeepEvery.
	UpkeepEvery time.Duration
	// QueryIndexes names the projector's indexes that serve queries only
	// (its Handle never needs them to be fast; a replay runs no Upkeep). A
	// replay builds
	// the projector's tables without them and creates them once, sorted,
	// at the end, instead of updating them for every event. Leaving one
	// out changes no result, only speed.
	QueryIndexes []string
}

// DefaultUpkeepEvery is how often a projector's Upkeep runs by default.
const DefaultUpkeepEvery = time.Minute

// Validate checks the name, the handler and the migration versions.
func (p Projector) Validate() error {
	var errs []error
	if !validName(p.Name) {
		errs = append(errs, fmt.Errorf("projector name %q: use lowercase letters, digits, '.', '_' and '-', starting with a letter", p.Name))
	}
	if p.Handle == nil {
		errs = append(errs, fmt.Errorf("projector %q: Handle is required", p.Name))
	}
	if err := readmodel.ValidateMigrations(p.Migrations); err != nil {
		errs = append(errs, fmt.Errorf("projector %q: %w", p.Name, err))
	}
	return errors.Join(errs...)
}

func validName(s string) bool {
	if s == "" || len(s) > 100 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
