package tenancy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// eraseShop drops every row of an erased shop, its credentials with it
// (its tokens, public and image keys stop authenticating, and without its
// webhook secret no delivery for it verifies), and keeps a tombstone:
// the shop id and when it was erased, nothing else.
func eraseShop(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased) error {
	if err := readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("tokens"), readmodel.ShopRows("public_keys"),
		readmodel.ShopRows("image_keys"), readmodel.ShopRows("credit_budgets"), readmodel.ShopRows("credit_months"), readmodel.ShopRows("platform_sessions"),
		readmodel.ShopRows("shops")); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO erased_shops (shop_id, erased_at) VALUES (?, ?) ON CONFLICT (shop_id) DO NOTHING`,
		ev.ShopID, readmodel.Micros(ev.ErasedAt))
	return err
}

// Countdown is a shop's pending retention countdown: the app was
// uninstalled and, unless it is installed again, the shop's data is
// erased at RetentionDueAt.
type Countdown struct {
	ShopID         string    `json:"shop_id"`
	UninstalledAt  time.Time `json:"uninstalled_at"`
	RetentionDueAt time.Time `json:"retention_due_at"`
}

// Countdowns lists the pending countdowns, soonest due first; with shop
// set, only that shop's (none when it is installed or unknown).
func (q *Queries) Countdowns(ctx context.Context, shop string) ([]Countdown, error) {
	query := `SELECT shop_id, uninstalled_at, retention_due_at FROM shops WHERE retention_due_at > 0`
	var args []any
	if shop != "" {
		query += ` AND shop_id = ?`
		args = append(args, shop)
	}
	return readmodel.List(ctx, q.db, "retention countdowns", func(s readmodel.Scanner) (Countdown, error) {
		var c Countdown
		var un, due int64
		if err := s.Scan(&c.ShopID, &un, &due); err != nil {
			return Countdown{}, err
		}
		c.UninstalledAt, c.RetentionDueAt = readmodel.Time(un), readmodel.Time(due)
		return c, nil
	}, query+` ORDER BY retention_due_at, shop_id`, args...)
}

// ErasedAt returns when the shop was erased (found false when it was
// not).
func (q *Queries) ErasedAt(ctx context.Context, shop string) (at time.Time, found bool, err error) {
	var us int64
	err = q.db.QueryRowContext(ctx, `SELECT erased_at FROM erased_shops WHERE shop_id = ?`, shop).Scan(&us)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("erased shop: %w", err)
	}
	return readmodel.Time(us), true, nil
}
