package batch

import (
	"context"
	"fmt"
	"sync"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/readmodel/versioned"
)

// Tables are the tables a store has migrated; every adapter keeps them to
// check and normalise what it is asked to write and read. The zero value
// is ready; safe for concurrent use.
type Tables struct {
	mu     sync.RWMutex
	tables map[string]versioned.Table
}

// Register records migrated tables.
func (ts *Tables) Register(tables []versioned.Table) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.tables == nil {
		ts.tables = make(map[string]versioned.Table, len(tables))
	}
	for _, t := range tables {
		ts.tables[t.Name] = t
	}
}

// Table returns a migrated table, or an error matching versioned.ErrInvalid.
func (ts *Tables) Table(name string) (versioned.Table, error) {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	t, ok := ts.tables[name]
	if !ok {
		return versioned.Table{}, fmt.Errorf("table %q not migrated: %w", name, versioned.ErrInvalid)
	}
	return t, nil
}

// Entries checks and normalises the changes projector writes at pos (the
// validation of versioned.Store.Write) into the batcher's entries.
func (ts *Tables) Entries(ctx context.Context, projector string, pos eventlog.Position, changes []versioned.Change) ([]Entry, error) {
	if projector == "" || pos == 0 {
		return nil, fmt.Errorf("write: empty projector or position 0: %w", versioned.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("write %s at %d: %w", projector, pos, err)
	}
	entries := make([]Entry, len(changes))
	for i, c := range changes {
		t, err := ts.Table(c.Table)
		if err != nil {
			return nil, fmt.Errorf("write %s at %d: %w", projector, pos, err)
		}
		row, err := t.NormalizeRow(c.Row, pos)
		if err != nil {
			return nil, fmt.Errorf("write %s at %d: %w", projector, pos, err)
		}
		entries[i] = Entry{Table: c.Table, Row: row}
	}
	return entries, nil
}

// Erasure checks an erasure request (the validation of
// versioned.Store.Erase) and returns the table and the normalised prefix.
func (ts *Tables) Erasure(table string, prefix []any, pos eventlog.Position) (versioned.Table, []any, error) {
	t, err := ts.Table(table)
	if err != nil {
		return versioned.Table{}, nil, fmt.Errorf("erase: %w", err)
	}
	p, err := t.NormalizeKey(prefix)
	if err == nil && len(p) == 0 {
		err = fmt.Errorf("table %s: erase needs a prefix: %w", table, versioned.ErrInvalid)
	}
	if err == nil && (pos == 0 || pos > 1<<63-1) {
		err = fmt.Errorf("table %s: erase at position %d: %w", table, pos, versioned.ErrInvalid)
	}
	if err != nil {
		return versioned.Table{}, nil, fmt.Errorf("erase: %w", err)
	}
	return t, p, nil
}

// Lookup checks a Get request and returns the table and the normalised
// full key.
func (ts *Tables) Lookup(table string, key []any) (versioned.Table, []any, error) {
	t, err := ts.Table(table)
	if err != nil {
		return versioned.Table{}, nil, fmt.Errorf("get: %w", err)
	}
	k, err := t.NormalizeKey(key)
	if err == nil && len(k) != len(t.Key) {
		err = fmt.Errorf("table %s: %d key values for a key of %d: %w", t.Name, len(k), len(t.Key), versioned.ErrInvalid)
	}
	if err != nil {
		return versioned.Table{}, nil, fmt.Errorf("get: %w", err)
	}
	return t, k, nil
}

// Scanning checks a Scan request and returns the table and the normalised
// query.
func (ts *Tables) Scanning(table string, q versioned.Query) (versioned.Table, versioned.Query, error) {
	t, err := ts.Table(table)
	if err != nil {
		return versioned.Table{}, q, fmt.Errorf("scan: %w", err)
	}
	if q, err = t.NormalizeQuery(q); err != nil {
		return versioned.Table{}, q, fmt.Errorf("scan: %w", err)
	}
	return t, q, nil
}
