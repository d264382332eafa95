// Package shoperasure keeps the shop-erasure reactor's tables: the tokens
// of each shop (so that they can be found again once the shop's key is
// shredded) and the shop erasures whose follow-up (once every read model
// dropped the shop's rows) is pending. The reactor's process (shredding
// keys, deleting stored answers and last uses, recording ShopErased for a
// shop/redact) is the app's (app.Erasures.ReactShopErasure); it reads and
// writes these tables only through this package.
//
// It imports eventlog, envelope, projections and readmodel.
package shoperasure

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the reactor's stable name.
const Name = "shop_erasure"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE shop_erasure_tokens (
	shop_id  TEXT NOT NULL,
	token_id TEXT NOT NULL,
	PRIMARY KEY (shop_id, token_id)
) WITHOUT ROWID;
CREATE TABLE shop_erasure_pending (
	shop_id  TEXT PRIMARY KEY,
	position INTEGER NOT NULL
);
`}}

// Projector returns the shop-erasure reactor: handle applies its events
// of types (those of the app's cases), decoded with codec.
func Projector(codec *envelope.Codec, types []string, handle projections.DecodedHandler) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      types,
		Handle:     projections.Decoding(codec, types, handle),
	}
}

// RecordToken remembers a token of shop, in the reactor's transaction.
func RecordToken(ctx context.Context, tx *sql.Tx, shop, token string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO shop_erasure_tokens (shop_id, token_id) VALUES (?, ?) ON CONFLICT DO NOTHING`, shop, token)
	if err != nil {
		return fmt.Errorf("token of %s: %w", shop, err)
	}
	return nil
}

// TokensOf returns the tokens of shop, in the reactor's transaction.
func TokensOf(ctx context.Context, tx *sql.Tx, shop string) ([]string, error) {
	tokens, err := readmodel.Strings(ctx, tx, `SELECT token_id FROM shop_erasure_tokens WHERE shop_id = ?`, shop)
	if err != nil {
		return nil, fmt.Errorf("tokens of erased shop: %w", err)
	}
	return tokens, nil
}

// RecordPending records the follow-up of the erasure of shop at pos (the
// ShopErased event's position), in the reactor's transaction.
func RecordPending(ctx context.Context, tx *sql.Tx, shop string, pos eventlog.Position) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO shop_erasure_pending (shop_id, position) VALUES (?, ?) ON CONFLICT DO NOTHING`, shop, int64(pos))
	if err != nil {
		return fmt.Errorf("pending erasure of %s: %w", shop, err)
	}
	return nil
}

// Pending is a shop erasure whose follow-up is not done.
type Pending struct {
	ShopID   string
	Position eventlog.Position // of the ShopErased event
}

// Queries reads the reactor's tables.
type Queries struct{ db *sql.DB }

// NewQueries returns queries over the read-model database.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Pending returns the pending follow-ups in the order of their erasures.
func (q *Queries) Pending(ctx context.Context) ([]Pending, error) {
	return readmodel.List(ctx, q.db, "pending shop erasures", func(s readmodel.Scanner) (Pending, error) {
		var p Pending
		err := s.Scan(&p.ShopID, &p.Position)
		return p, err
	}, `SELECT shop_id, position FROM shop_erasure_pending ORDER BY position`)
}

// Tokens returns the tokens of an erased shop whose follow-up is pending.
func (q *Queries) Tokens(ctx context.Context, shop string) ([]string, error) {
	return readmodel.List(ctx, q.db, "tokens of an erased shop", func(s readmodel.Scanner) (string, error) {
		var id string
		err := s.Scan(&id)
		return id, err
	}, `SELECT token_id FROM shop_erasure_tokens WHERE shop_id = ?`, shop)
}

// Settle forgets the tokens and the follow-up of shop once the follow-up
// is done.
func Settle(ctx context.Context, store readmodel.Store, shop string) error {
	return store.Maintain(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM shop_erasure_tokens WHERE shop_id = ?`, shop); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM shop_erasure_pending WHERE shop_id = ?`, shop)
		return err
	})
}
