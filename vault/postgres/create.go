package postgres

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// maxCreateBatch bounds how many queued creates one transaction takes.
const maxCreateBatch = 512

// batchTimeout bounds one create transaction, so that an unresponsive
// server cannot stall the batcher (and every create behind it) for ever;
// callers give up earlier with their own ctx.
const batchTimeout = 30 * time.Second

// ErrClosed is returned by DataKey when it must create a key after Close
// has begun.
var ErrClosed = errors.New("postgres vault closed")

// createReq is one creating DataKey call waiting for the batcher.
type createReq struct {
	shop, subject string
	// fresh is the caller's new key, wrapped; stored if the subject has no
	// row (key or tombstone) and its shop is not shredded.
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
	// wrapped is the subject's stored key (the request's own fresh one when
	// inserted is set); nil when shredded.
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
	if err := ctx.Err(); err != nil {
		return createResult{}, err
	}
	r := &createReq{shop: shop, subject: subject, fresh: fresh, gone: ctx.Done(), done: make(chan createResult, 1)}
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return createResult{}, ErrClosed
	}
	v.pending = append(v.pending, r)
	v.mu.Unlock()
	v.signal()
	select {
	case res := <-r.done:
		return res, res.err
	case <-ctx.Done():
		return createResult{}, ctx.Err()
	}
}

// signal wakes the batcher if it sleeps.
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
	var batch []*createReq
	for {
		batch = v.nextBatch(batch[:0])
		if len(batch) == 0 {
			return
		}
		v.commitCreates(batch)
		clear(batch)
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

// commitCreates runs one batch and answers each request whose caller is
// still waiting.
func (v *Vault) commitCreates(batch []*createReq) {
	live := batch[:0]
	for _, r := range batch {
		select {
		case <-r.gone:
			// The caller has returned ctx.Err(); creating nothing is
			// cheapest.
		default:
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	out := make([]createResult, len(live))
	created, err := v.createTx(ctx, live, out)
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
		r.done <- out[i]
	}
}

type subjectID struct{ shop, subject string }

// createTx creates the batch's keys in one implicit transaction: the four
// statements go to the server in one pipeline (pgx.Batch) and commit at its
// end, one round trip in all. They record the batch's shops, hold them
// shared (ShredShop takes its shop's row exclusively, so it waits for this
// transaction and then deletes what it inserted), insert the fresh keys of
// subjects in shops not shredded with ON CONFLICT DO NOTHING, and read back
// what is stored: ours, a concurrent creator's, or a tombstone (NULL). Rows
// are taken in (shop, subject) order, so that concurrent batches, of this
// process or another, lock them in one order and cannot deadlock. Two
// requests for one subject get the same answer. It fills out, one answer
// per request, and reports how many keys it inserted; on error nothing is
// committed and out must be ignored.
func (v *Vault) createTx(ctx context.Context, batch []*createReq, out []createResult) (uint64, error) {
	// The first request for each subject supplies the fresh key.
	first := make(map[subjectID]int, len(batch))
	var ids []subjectID
	for i, r := range batch {
		id := subjectID{r.shop, r.subject}
		if _, dup := first[id]; !dup {
			first[id] = i
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b subjectID) int {
		return cmp.Or(cmp.Compare(a.shop, b.shop), cmp.Compare(a.subject, b.subject))
	})
	shops := make([]string, 0, 1)
	shopOf := make([]string, len(ids))
	subjects := make([]string, len(ids))
	fresh := make([][]byte, len(ids))
	for i, id := range ids {
		if len(shops) == 0 || shops[len(shops)-1] != id.shop {
			shops = append(shops, id.shop)
		}
		shopOf[i], subjects[i], fresh[i] = id.shop, id.subject, batch[first[id]].fresh
	}

	var b pgx.Batch
	b.Queue(v.q.insertShops, shops)
	b.Queue(v.q.lockShops, shops)
	b.Queue(v.q.insertKeys, shopOf, subjects, fresh, v.now())
	b.Queue(v.q.selectKeys, shopOf, subjects)
	br := v.writer.SendBatch(ctx, &b)
	stored, shredded, err := readBatch(br)
	// Close waits for the end of the pipeline: the commit, or the error
	// that rolled it back.
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("commit: %w", cerr)
	}
	if err != nil {
		return 0, err
	}

	var created uint64
	for i, r := range batch {
		id := subjectID{r.shop, r.subject}
		w, ok := stored[id]
		switch {
		case shredded[r.shop] || (ok && w == nil):
			out[i] = createResult{shredded: true}
		case !ok:
			// Not possible while the shop row is held: only ShredShop
			// deletes a key row.
			return 0, fmt.Errorf("read keys: no row for a subject after insert")
		default:
			mine := first[id] == i && bytes.Equal(w, r.fresh)
			out[i] = createResult{wrapped: w, inserted: mine}
			if mine {
				created++
			}
		}
	}
	return created, nil
}

// readBatch reads the results of createTx's pipeline: the stored key (nil
// for a tombstone) of each subject that has a row, and which shops are
// shredded.
func readBatch(br pgx.BatchResults) (map[subjectID][]byte, map[string]bool, error) {
	if _, err := br.Exec(); err != nil {
		return nil, nil, fmt.Errorf("record shops: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, nil, fmt.Errorf("lock shops: %w", err)
	}
	shredded := make(map[string]bool)
	var shop string
	var isShredded bool
	if _, err := pgx.ForEachRow(rows, []any{&shop, &isShredded}, func() error {
		shredded[shop] = isShredded
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("lock shops: %w", err)
	}
	if _, err := br.Exec(); err != nil {
		return nil, nil, fmt.Errorf("insert keys: %w", err)
	}
	rows, err = br.Query()
	if err != nil {
		return nil, nil, fmt.Errorf("read keys: %w", err)
	}
	stored := make(map[subjectID][]byte)
	var id subjectID
	var w []byte
	if _, err := pgx.ForEachRow(rows, []any{&id.shop, &id.subject, &w}, func() error {
		stored[id] = w
		w = nil // scan the next row into a slice of its own
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("read keys: %w", err)
	}
	return stored, shredded, nil
}
