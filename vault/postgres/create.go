package postgres

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cgp-platform/cgp/vault/internal/batch"
	"github.com/cgp-platform/cgp/vault/internal/wrapstore"
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

// Stats counts the create batcher's work since Open: Commits is the number
// of create transactions committed, Requests the creating DataKey calls they
// answered (keys found, created or refused as shredded), Created the data
// keys they created. Requests/Commits is the mean group-commit size.
type Stats = batch.Stats

// Stats reports the create batcher's counters.
func (v *Vault) Stats() Stats { return v.keys.Creates.Stats() }

// commitCreates is the create batcher's commit: createTx, bounded by
// batchTimeout.
func (v *Vault) commitCreates(reqs []wrapstore.CreateRequest, out []wrapstore.CreateResult) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	return v.createTx(ctx, reqs, out)
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
func (v *Vault) createTx(ctx context.Context, reqs []wrapstore.CreateRequest, out []wrapstore.CreateResult) (uint64, error) {
	// The first request for each subject supplies the fresh key.
	first := make(map[subjectID]int, len(reqs))
	var ids []subjectID
	for i, r := range reqs {
		id := subjectID{r.Shop, r.Subject}
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
		shopOf[i], subjects[i], fresh[i] = id.shop, id.subject, reqs[first[id]].Fresh
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
	for i, r := range reqs {
		id := subjectID{r.Shop, r.Subject}
		w, ok := stored[id]
		switch {
		case shredded[r.Shop] || (ok && w == nil):
			out[i] = wrapstore.CreateResult{Shredded: true}
		case !ok:
			// Not possible while the shop row is held: only ShredShop
			// deletes a key row.
			return 0, fmt.Errorf("read keys: no row for a subject after insert")
		default:
			mine := first[id] == i && bytes.Equal(w, r.Fresh)
			out[i] = wrapstore.CreateResult{Wrapped: w, Inserted: mine}
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
