package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
)

// maxCreateBatch bounds how many queued creates one transaction takes, so
// that one transaction (and the write lock it holds) stays short while a
// burst is queued.
const maxCreateBatch = 512

// createReq is one creating DataKey call waiting for the batcher.
type createReq struct {
	shop, subject string
	// fresh is the caller's new key, wrapped; stored if the subject has
	// neither a key nor a tombstone when the batch runs.
	fresh []byte
	// gone is the caller's ctx.Done(): a request whose caller has gone
	// before its batch starts is dropped unanswered.
	gone <-chan struct{}
	// done receives the answer; buffered, so the batcher never waits for a
	// caller that has stopped listening.
	done chan createResult
}

// createResult is the batcher's answer to one createReq.
type createResult struct {
	// wrapped is the subject's stored key: the request's own fresh one when
	// inserted, else the key found or created first in the same batch.
	wrapped  []byte
	inserted bool
	shredded bool
	err      error
}

// Stats counts the create batcher's work since Open.
type Stats struct {
	// Commits is the number of create transactions committed, one per
	// batch.
	Commits uint64
	// Requests is the number of creating DataKey calls those transactions
	// answered (keys found, created or refused as shredded).
	Requests uint64
	// Created is the number of data keys they created. Requests/Commits is
	// the mean group-commit size.
	Created uint64
}

type counters struct {
	commits, requests, created atomic.Uint64
}

// Stats reports the create batcher's counters.
func (v *Vault) Stats() Stats {
	return Stats{
		Commits:  v.stats.commits.Load(),
		Requests: v.stats.requests.Load(),
		Created:  v.stats.created.Load(),
	}
}

// create queues a request for the batcher and waits for its answer or for
// ctx. When ctx ends first the key may or may not be created; a later
// DataKey returns it if it was.
func (v *Vault) create(ctx context.Context, shop, subject string, fresh []byte) (createResult, error) {
	r, err := v.enqueue(ctx, shop, subject, fresh)
	if err != nil {
		return createResult{}, err
	}
	select {
	case res := <-r.done:
		return res, res.err
	case <-ctx.Done():
		return createResult{}, ctx.Err()
	}
}

// enqueue queues a create request and wakes the batcher.
func (v *Vault) enqueue(ctx context.Context, shop, subject string, fresh []byte) (*createReq, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &createReq{shop: shop, subject: subject, fresh: fresh, gone: ctx.Done(), done: make(chan createResult, 1)}
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil, ErrClosed
	}
	v.pending = append(v.pending, r)
	v.mu.Unlock()
	v.signal()
	return r, nil
}

// signal wakes the batcher if it sleeps; a wake-up already pending covers
// this one.
func (v *Vault) signal() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// runCreates is the batcher goroutine. It commits what is queued, batch by
// batch, and returns once Close has set closed and the queue is empty, so
// every request queued before Close is answered.
func (v *Vault) runCreates() {
	defer close(v.batcherDone)
	var (
		batch   []*createReq
		results []createResult
	)
	for {
		batch = v.nextBatch(batch[:0])
		if len(batch) == 0 {
			return
		}
		results = v.commitCreates(batch, results)
		clear(batch)
		clear(results)
	}
}

// nextBatch moves up to maxCreateBatch queued requests, oldest first, into
// buf. It waits while the queue is empty, and returns an empty batch only
// once the vault is closed and the queue drained.
func (v *Vault) nextBatch(buf []*createReq) []*createReq {
	for {
		v.mu.Lock()
		if n := min(len(v.pending), maxCreateBatch); n > 0 {
			buf = append(buf, v.pending[:n]...)
			rest := copy(v.pending, v.pending[n:])
			clear(v.pending[rest:])
			v.pending = v.pending[:rest]
			v.mu.Unlock()
			return buf
		}
		closed := v.closed
		v.mu.Unlock()
		if closed {
			return buf
		}
		<-v.wake
	}
}

// commitCreates runs one batch under the in-process write lock and answers
// each request whose caller is still waiting. results is scratch space,
// returned for reuse.
func (v *Vault) commitCreates(batch []*createReq, results []createResult) []createResult {
	v.write <- struct{}{}
	defer func() { <-v.write }()

	live := batch[:0]
	for _, r := range batch {
		select {
		case <-r.gone:
			// The caller has returned ctx.Err(); it asked for nothing to be
			// guaranteed, and creating nothing is cheapest.
		default:
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return results
	}
	results = slices.Grow(results[:0], len(live))[:len(live)]
	created, err := v.creator.createTx(live, results, v.now().UnixMilli())
	if err == nil {
		v.stats.commits.Add(1)
		v.stats.requests.Add(uint64(len(live)))
		v.stats.created.Add(created)
	}
	for i, r := range live {
		if err != nil {
			r.done <- createResult{err: err}
			continue
		}
		r.done <- results[i]
	}
	return results
}

// creator owns the batcher's connection and statements, prepared once.
// Only the batcher goroutine uses it after Open; Close closes it after the
// batcher has returned.
type creator struct {
	conn                          *sql.Conn
	begin, commit, rollback, look *sql.Stmt
	// unsure is set when a failed batch's ROLLBACK failed too, so the
	// connection may still be inside that transaction: the next batch rolls
	// back first.
	unsure bool
}

func newCreator(ctx context.Context, db *sql.DB) (*creator, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("writer connection: %w", err)
	}
	c := &creator{conn: conn}
	prepare := func(dst **sql.Stmt, query string) {
		if err != nil {
			return
		}
		if *dst, err = conn.PrepareContext(ctx, query); err != nil {
			err = fmt.Errorf("prepare %q: %w", query, err)
		}
	}
	// The transaction is managed by hand on this connection rather than
	// with sql.Tx, so that the statements are prepared once, not per batch.
	prepare(&c.begin, "BEGIN IMMEDIATE")
	prepare(&c.commit, "COMMIT")
	prepare(&c.rollback, "ROLLBACK")
	prepare(&c.look, lookupSQL)
	if err != nil {
		return nil, errors.Join(err, c.close())
	}
	return c, nil
}

func (c *creator) close() error {
	var errs []error
	for _, s := range []*sql.Stmt{c.begin, c.commit, c.rollback, c.look} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(append(errs, c.conn.Close())...)
}

// insertSQL returns the statement that inserts rows fresh keys at once,
// skipping subjects that have a key (ON CONFLICT), a tombstone or a shredded
// shop, and returns the subjects it inserted. Its parameters are created_at
// then (shop, subject, wrapped) per row.
func insertSQL(rows int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO data_keys (shop, subject, wrapped, created_at)
		SELECT r.column1, r.column2, r.column3, ? FROM (VALUES `)
	for i := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?)")
	}
	b.WriteString(`) AS r
		WHERE NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.shop = r.column1 AND t.subject = r.column2)
			AND NOT EXISTS (SELECT 1 FROM shredded_shops s WHERE s.shop = r.column1)
		ON CONFLICT DO NOTHING
		RETURNING shop, subject`)
	return b.String()
}

// createTx inserts the fresh keys of batch under SQLite's write lock, where
// a subject has neither a key nor a tombstone (nor a shredded shop), in one
// transaction committed (and, with synchronous=FULL, fsynced) before it
// returns; the subjects it could not insert are looked up again. Two
// requests for one subject get the same answer. It fills out, one answer
// per request, and reports how many keys it inserted; on error nothing is
// committed and out must be ignored.
func (c *creator) createTx(batch []*createReq, out []createResult, now int64) (uint64, error) {
	// The batch outlives any one caller's ctx; the busy timeout bounds the
	// wait for another process's write lock.
	ctx := context.Background()

	// One row per subject: the first request asking for it.
	first := make(map[[2]string]int, len(batch))
	args := make([]any, 1, 1+3*len(batch))
	args[0] = now
	for i, r := range batch {
		id := [2]string{r.shop, r.subject}
		if _, dup := first[id]; !dup {
			first[id] = i
			args = append(args, r.shop, r.subject, r.fresh)
		}
	}

	if c.unsure {
		// An error here means there was no transaction left to end.
		_, _ = c.rollback.ExecContext(ctx)
		c.unsure = false
	}
	if _, err := c.begin.ExecContext(ctx); err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			// It fails when SQLite has already rolled back by itself, and,
			// rarely, for another reason: then try again next time.
			if _, err := c.rollback.ExecContext(ctx); err != nil {
				c.unsure = true
			}
		}
	}()
	inserted, err := c.insertAll(ctx, len(first), args)
	if err != nil {
		return 0, err
	}
	for i, r := range batch {
		id := [2]string{r.shop, r.subject}
		j := first[id]
		switch {
		case j < i: // a duplicate: the first request's answer
			out[i] = createResult{wrapped: out[j].wrapped, shredded: out[j].shredded}
		case inserted[id]:
			out[i] = createResult{wrapped: r.fresh, inserted: true}
		default:
			wrapped, shredded, err := scanLookup(c.look.QueryRowContext(ctx, r.shop, r.subject))
			if err != nil {
				return 0, err
			}
			if !shredded && wrapped == nil {
				return 0, fmt.Errorf("insert key: neither inserted nor found")
			}
			out[i] = createResult{wrapped: wrapped, shredded: shredded}
		}
	}
	if _, err := c.commit.ExecContext(ctx); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	committed = true
	return uint64(len(inserted)), nil
}

// insertAll runs insertSQL for rows rows and returns the subjects inserted.
func (c *creator) insertAll(ctx context.Context, rows int, args []any) (map[[2]string]bool, error) {
	res, err := c.conn.QueryContext(ctx, insertSQL(rows), args...)
	if err != nil {
		return nil, fmt.Errorf("insert keys: %w", err)
	}
	defer res.Close()
	inserted := make(map[[2]string]bool, rows)
	for res.Next() {
		var id [2]string
		if err := res.Scan(&id[0], &id[1]); err != nil {
			return nil, fmt.Errorf("insert keys: %w", err)
		}
		inserted[id] = true
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("insert keys: %w", err)
	}
	return inserted, nil
}
