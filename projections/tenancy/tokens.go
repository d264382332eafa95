package tenancy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// tokenListSQL keeps when each token was last rotated, for the token
// list of the API and the admin interface (a read model built before
// this migration knows it after a replay).
const tokenListSQL = `
ALTER TABLE tokens ADD COLUMN rotated_at INTEGER NOT NULL DEFAULT 0;
`

// ShopToken is one admin token of a shop as the token list shows it.
type ShopToken struct {
	ID          string
	Name        string
	Scopes      []domain.Scope
	Environment string
	CreatedAt   time.Time
	RotatedAt   time.Time // zero: never rotated
	RevokedAt   time.Time // zero: active
}

// ShopTokens returns the shop's admin tokens, revoked ones included, the
// newest first.
func (q *Queries) ShopTokens(ctx context.Context, shopID string) ([]ShopToken, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT token_id, name, scopes, environment, created_at, rotated_at, revoked_at
		FROM tokens WHERE shop_id = ? AND master = 0 ORDER BY created_at DESC, token_id DESC`, shopID)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	var out []ShopToken
	for rows.Next() {
		var t ShopToken
		var scopes string
		var created, rotated, revoked int64
		if err := rows.Scan(&t.ID, &t.Name, &scopes, &t.Environment, &created, &rotated, &revoked); err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		if err := json.Unmarshal([]byte(scopes), &t.Scopes); err != nil {
			return nil, fmt.Errorf("token %s scopes: %w", t.ID, err)
		}
		t.CreatedAt = time.UnixMicro(created).UTC()
		if rotated != 0 {
			t.RotatedAt = time.UnixMicro(rotated).UTC()
		}
		if revoked != 0 {
			t.RevokedAt = time.UnixMicro(revoked).UTC()
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
