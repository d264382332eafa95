package batch

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/cgp-platform/cgp/readmodel/versioned"
)

// Batch is a sealed set of rows of one table. Once sealed it never changes,
// so a retried send carries the same rows and the same Token.
type Batch struct {
	Table string
	Rows  []versioned.Row
	// First and Last are the lowest and highest log positions of the
	// writes whose rows the batch holds.
	First, Last uint64
	// Token identifies the batch's content: the table, First, Last, the
	// number of rows and a hash of every row. A store uses it to drop a
	// batch it already received (ClickHouse insert_deduplication_token).
	Token string

	marks []*mark // one per row
}

// Checkpoint is a projector's position to save.
type Checkpoint struct {
	Projector string
	Position  uint64
}

// Sender sends sealed batches and saves checkpoints durably. Calls are
// serialised by the Batcher.
type Sender interface {
	// Send stores b durably or fails; after a failure b may be sent again.
	Send(ctx context.Context, b *Batch) error
	// SaveCheckpoints stores the checkpoints (each only moves forward).
	SaveCheckpoints(ctx context.Context, cps []Checkpoint) error
}

// Config tunes a Batcher.
type Config struct {
	// MaxRows seals a table's open batch when it holds this many rows.
	// Default 5000.
	MaxRows int
	// MaxDelay seals a table's open batch this long after its first row,
	// so a table gets at most about one send per MaxDelay. Default 1 s.
	MaxDelay time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.MaxRows <= 0 {
		c.MaxRows = 5000
	}
	if c.MaxDelay <= 0 {
		c.MaxDelay = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// mark counts the rows of one write not yet sent.
type mark struct {
	pos     uint64
	pending int
}

type queue struct {
	sealed []*Batch
	open   *Batch
	opened time.Time
}

type progress struct {
	marks []*mark // in write order
	safe  uint64  // every write up to here was sent
	saved uint64  // last checkpoint saved
}

// Batcher is safe for concurrent use.
type Batcher struct {
	cfg    Config
	sender Sender

	send sync.Mutex // one sending flush at a time; taken before mu

	mu       sync.Mutex
	tables   map[string]*queue
	progress map[string]*progress
	queued   int
}

// New returns a Batcher that sends through s.
func New(cfg Config, s Sender) *Batcher {
	cfg.setDefaults()
	return &Batcher{cfg: cfg, sender: s, tables: map[string]*queue{}, progress: map[string]*progress{}}
}

// Entry is one normalised row for one table.
type Entry struct {
	Table string
	Row   versioned.Row
}

// Add queues the rows written by projector at pos. It sends nothing.
func (b *Batcher) Add(projector string, pos uint64, rows []Entry) {
	now := b.cfg.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.progress[projector]
	if p == nil {
		p = &progress{}
		b.progress[projector] = p
	}
	m := &mark{pos: pos, pending: len(rows)}
	p.marks = append(p.marks, m)
	for _, e := range rows {
		q := b.tables[e.Table]
		if q == nil {
			q = &queue{}
			b.tables[e.Table] = q
		}
		if q.open == nil {
			q.open = &Batch{Table: e.Table, First: pos, Last: pos}
			q.opened = now
		}
		o := q.open
		o.Rows = append(o.Rows, e.Row)
		o.marks = append(o.marks, m)
		o.First, o.Last = min(o.First, pos), max(o.Last, pos)
		b.queued++
		if len(o.Rows) >= b.cfg.MaxRows {
			q.seal()
		}
	}
}

// Queued returns the number of rows not yet sent.
func (b *Batcher) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queued
}

func (q *queue) seal() {
	if q.open == nil {
		return
	}
	q.open.Token = token(q.open)
	q.sealed = append(q.sealed, q.open)
	q.open = nil
}

// Flush seals every open batch, sends every sealed one and saves the
// checkpoints that moved. It stops at the first failure: that batch and
// the ones after it stay queued, sealed as they are.
func (b *Batcher) Flush(ctx context.Context) error { return b.flush(ctx, true) }

// FlushDue seals the open batches older than MaxDelay, then sends what is
// sealed (full or old batches) and saves the checkpoints that moved.
func (b *Batcher) FlushDue(ctx context.Context) error { return b.flush(ctx, false) }

func (b *Batcher) flush(ctx context.Context, all bool) error {
	b.send.Lock()
	defer b.send.Unlock()
	now := b.cfg.Now()
	var batches []*Batch
	b.mu.Lock()
	names := make([]string, 0, len(b.tables))
	for name := range b.tables {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		q := b.tables[name]
		if q.open != nil && (all || now.Sub(q.opened) >= b.cfg.MaxDelay) {
			q.seal()
		}
		batches = append(batches, q.sealed...)
	}
	b.mu.Unlock()

	var sendErr error
	for _, bt := range batches {
		if err := b.sender.Send(ctx, bt); err != nil {
			sendErr = fmt.Errorf("send %d rows of %s (positions %d to %d): %w", len(bt.Rows), bt.Table, bt.First, bt.Last, err)
			break
		}
		b.sent(bt)
	}
	if err := b.saveCheckpoints(ctx); err != nil {
		return errors.Join(sendErr, err)
	}
	return sendErr
}

// sent removes bt from its queue and counts its rows as sent.
func (b *Batcher) sent(bt *Batch) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.tables[bt.Table]
	if q == nil { // cannot happen: a batch in flight keeps its queue
		return
	}
	for i, s := range q.sealed {
		if s == bt {
			q.sealed = append(q.sealed[:i], q.sealed[i+1:]...)
			break
		}
	}
	if q.open == nil && len(q.sealed) == 0 {
		delete(b.tables, bt.Table)
	}
	for _, m := range bt.marks {
		m.pending--
	}
	b.queued -= len(bt.Rows)
}

func (b *Batcher) saveCheckpoints(ctx context.Context) error {
	b.mu.Lock()
	var cps []Checkpoint
	for name, p := range b.progress {
		n := 0
		for n < len(p.marks) && p.marks[n].pending == 0 {
			p.safe = max(p.safe, p.marks[n].pos)
			n++
		}
		p.marks = p.marks[n:]
		if p.safe > p.saved {
			cps = append(cps, Checkpoint{Projector: name, Position: p.safe})
		}
	}
	b.mu.Unlock()
	if len(cps) == 0 {
		return nil
	}
	sort.Slice(cps, func(i, j int) bool { return cps[i].Projector < cps[j].Projector })
	if err := b.sender.SaveCheckpoints(ctx, cps); err != nil {
		return fmt.Errorf("save %d checkpoints: %w", len(cps), err)
	}
	b.mu.Lock()
	for _, cp := range cps {
		p := b.progress[cp.Projector]
		p.saved = max(p.saved, cp.Position)
		if len(p.marks) == 0 && p.saved == p.safe {
			delete(b.progress, cp.Projector)
		}
	}
	b.mu.Unlock()
	return nil
}

// token derives a batch's deduplication token from its content, so that
// the same batch always gets the same token and two different batches
// (almost surely) never do.
func token(bt *Batch) string {
	h := fnv.New128a()
	var buf [8]byte
	put := func(u uint64) {
		binary.BigEndian.PutUint64(buf[:], u)
		h.Write(buf[:])
	}
	for _, r := range bt.Rows {
		put(r.Version)
		if r.Deleted {
			put(1)
		} else {
			put(0)
		}
		for _, v := range r.Values {
			switch x := v.(type) {
			case string:
				h.Write([]byte{'s'})
				put(uint64(len(x)))
				h.Write([]byte(x))
			case int64:
				h.Write([]byte{'i'})
				put(uint64(x))
			case float64:
				h.Write([]byte{'f'})
				put(math.Float64bits(x))
			default:
				h.Write([]byte{'?'})
			}
		}
	}
	return fmt.Sprintf("%s-%d-%d-%d-%x", bt.Table, bt.First, bt.Last, len(bt.Rows), h.Sum(nil))
}

// Seal returns a sealed batch of rows outside any queue (rows sent
// directly, such as erasure tombstones), with its token.
func Seal(table string, rows []versioned.Row, first, last uint64) *Batch {
	b := &Batch{Table: table, Rows: rows, First: first, Last: last}
	b.Token = token(b)
	return b
}
