package tenancy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
)

// creditsSQL holds the AI credits read model (issue 19, point 3): a
// shop's budget override and, per billing month, the credits used and
// reserved and the operations consumed per kind. No personal data; the
// rows go with the shop (eraseShop).
const creditsSQL = `
CREATE TABLE credit_budgets (
	shop_id TEXT PRIMARY KEY,
	monthly INTEGER NOT NULL
);
CREATE TABLE credit_months (
	shop_id             TEXT NOT NULL,
	month               TEXT NOT NULL,
	used                INTEGER NOT NULL DEFAULT 0,
	reserved            INTEGER NOT NULL DEFAULT 0,
	background_removals INTEGER NOT NULL DEFAULT 0,
	upscales            INTEGER NOT NULL DEFAULT 0,
	lifestyle_scenes    INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (shop_id, month)
);
`

// creditTypes are the credit events: they change no credential, so they
// do not call the projector's changed callback.
var creditTypes = map[string]bool{"CreditsReserved": true, "CreditsConsumed": true, "CreditsReleased": true, "CreditBudgetSet": true}

// creditCases fold the credit events. The ledger's aggregate only emits a
// consumption or release of an open reservation, so the columns move by
// the event's credits without per-operation rows.
func creditCases() []projections.TxCase {
	return []projections.TxCase{
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CreditsReserved, _ *projections.DecodedEvent) error {
			return addCredits(ctx, tx, ev.ShopID, ev.Month, 0, ev.Credits, "")
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CreditsConsumed, _ *projections.DecodedEvent) error {
			return addCredits(ctx, tx, ev.ShopID, ev.Month, ev.Credits, -ev.Credits, kindColumn(ev.Kind))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CreditsReleased, _ *projections.DecodedEvent) error {
			return addCredits(ctx, tx, ev.ShopID, ev.Month, 0, -ev.Credits, "")
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CreditBudgetSet, _ *projections.DecodedEvent) error {
			if ev.Monthly == nil {
				_, err := tx.ExecContext(ctx, `DELETE FROM credit_budgets WHERE shop_id = ?`, ev.ShopID)
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO credit_budgets (shop_id, monthly) VALUES (?, ?)
				ON CONFLICT (shop_id) DO UPDATE SET monthly = excluded.monthly`, ev.ShopID, *ev.Monthly)
			return err
		}),
	}
}

// kindColumn is the count column of an operation kind ("" for none).
func kindColumn(kind string) string {
	switch kind {
	case domain.CreditKindBackgroundRemoval:
		return "background_removals"
	case domain.CreditKindUpscale:
		return "upscales"
	case domain.CreditKindLifestyleScene:
		return "lifestyle_scenes"
	}
	return ""
}

func addCredits(ctx context.Context, tx *sql.Tx, shop, month string, used, reserved int, kind string) error {
	count := ""
	if kind != "" {
		count = ", " + kind + " = " + kind + " + 1"
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO credit_months (shop_id, month) VALUES (?, ?) ON CONFLICT (shop_id, month) DO NOTHING`, shop, month)
	if err == nil {
		_, err = tx.ExecContext(ctx, `UPDATE credit_months SET used = used + ?, reserved = reserved + ?`+count+
			` WHERE shop_id = ? AND month = ?`, used, reserved, shop, month)
	}
	if err != nil {
		return fmt.Errorf("credits of %s in %s: %w", shop, month, err)
	}
	return nil
}

// CreditUsage is a shop's AI credits in a billing month.
type CreditUsage struct {
	// Override is the operator's monthly budget; nil: the plan's.
	Override *int
	Used     int
	Reserved int
	// Operations consumed, per kind.
	BackgroundRemovals, Upscales, LifestyleScenes int
}

// Credits returns a shop's AI credits in month ("YYYY-MM"): zeros for a
// month without operations.
func (q *Queries) Credits(ctx context.Context, shop, month string) (CreditUsage, error) {
	var u CreditUsage
	var monthly int
	err := q.db.QueryRowContext(ctx, `SELECT monthly FROM credit_budgets WHERE shop_id = ?`, shop).Scan(&monthly)
	switch {
	case err == nil:
		u.Override = &monthly
	case !errors.Is(err, sql.ErrNoRows):
		return u, fmt.Errorf("credit budget: %w", err)
	}
	err = q.db.QueryRowContext(ctx, `SELECT used, reserved, background_removals, upscales, lifestyle_scenes
		FROM credit_months WHERE shop_id = ? AND month = ?`, shop, month).
		Scan(&u.Used, &u.Reserved, &u.BackgroundRemovals, &u.Upscales, &u.LifestyleScenes)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return u, fmt.Errorf("credits: %w", err)
	}
	return u, nil
}
