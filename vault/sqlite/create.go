package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/cgp-platform/cgp/vault/internal/batch"
	"github.com/cgp-platform/cgp/vault/internal/wrapstore"
)

// maxCreateBatch bounds how many queued creates one transaction takes, so
// that one transaction (and the write lock it holds) stays short while a
// burst is queued.
const maxCreateBatch = 512

// Stats counts the create batcher's work since Open: Commits is the number
// of create transactions committed, Requests the creating DataKey calls they
// answered (keys found, created or refused as shredded), Created the data
// keys they created. Requests/Commits is the mean group-commit size.
type Stats = batch.Stats

// Stats reports the create batcher's counters.
func (v *Vault) Stats() Stats { return v.keys.Creates.Stats() }

// commitCreates is the create batcher's commit; the batcher holds the
// in-process write lock around it.
func (v *Vault) commitCreates(reqs []wrapstore.CreateRequest, out []wrapstore.CreateResult) (uint64, error) {
	return v.creator.createTx(reqs, out, v.now().UnixMilli())
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

// createTx inserts the fresh keys of reqs under SQLite's write lock, where
// a subject has neither a key nor a tombstone (nor a shredded shop), in one
// transaction committed (and, with synchronous=FULL, fsynced) before it
// returns; the subjects it could not insert are looked up again. Two
// requests for one subject get the same answer. It fills out, one answer
// per request, and reports how many keys it inserted; on error nothing is
// committed and out must be ignored.
func (c *creator) createTx(reqs []wrapstore.CreateRequest, out []wrapstore.CreateResult, now int64) (uint64, error) {
	// The batch outlives any one caller's ctx; the busy timeout bounds the
	// wait for another process's write lock.
	ctx := context.Background()

	// One row per subject: the first request asking for it.
	first := make(map[[2]string]int, len(reqs))
	args := make([]any, 1, 1+3*len(reqs))
	args[0] = now
	for i, r := range reqs {
		id := [2]string{r.Shop, r.Subject}
		if _, dup := first[id]; !dup {
			first[id] = i
			args = append(args, r.Shop, r.Subject, r.Fresh)
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
	for i, r := range reqs {
		id := [2]string{r.Shop, r.Subject}
		j := first[id]
		switch {
		case j < i: // a duplicate: the first request's answer
			out[i] = wrapstore.CreateResult{Wrapped: out[j].Wrapped, Shredded: out[j].Shredded}
		case inserted[id]:
			out[i] = wrapstore.CreateResult{Wrapped: r.Fresh, Inserted: true}
		default:
			wrapped, shredded, err := scanLookup(c.look.QueryRowContext(ctx, r.Shop, r.Subject))
			if err != nil {
				return 0, err
			}
			if !shredded && wrapped == nil {
				return 0, fmt.Errorf("insert key: neither inserted nor found")
			}
			out[i] = wrapstore.CreateResult{Wrapped: wrapped, Shredded: shredded}
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
