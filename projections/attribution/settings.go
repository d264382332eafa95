package attribution

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	attr "github.com/cgp-platform/cgp/attribution"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// saveSettings keeps a shop's latest attribution settings.
func saveSettings(ctx context.Context, tx *sql.Tx, ev *domain.AttributionSettingsChanged, pos int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO attribution_settings (shop_id, lookback_seconds, changed_at, version) VALUES (?, ?, ?, ?)
		ON CONFLICT (shop_id) DO UPDATE SET lookback_seconds = excluded.lookback_seconds, changed_at = excluded.changed_at,
			version = excluded.version
		WHERE attribution_settings.version < excluded.version`,
		ev.ShopID, ev.LookbackSeconds, readmodel.Micros(ev.ChangedAt), pos)
	if err != nil {
		return fmt.Errorf("attribution settings: %w", err)
	}
	return nil
}

// shopConfig is the projector's configuration with the shop's lookback
// window (lookback_seconds, NULL when the shop recorded none). A stored
// window outside the bounds (impossible through the command) is clamped.
func (p *projector) shopConfig(lookback sql.NullInt64) attr.Config {
	cfg := p.cfg
	if lookback.Valid {
		cfg.Lookback = min(max(time.Duration(lookback.Int64)*time.Second, domain.MinLookback), domain.MaxLookback)
	}
	return cfg
}

// Settings is a shop's attribution settings as the read model holds them.
type Settings struct {
	ShopID string
	// Lookback is the window in force: the shop's, or the default.
	Lookback time.Duration
	// Custom is true when the shop recorded a window; ChangedAt is when.
	Custom    bool
	ChangedAt time.Time
}

// Settings returns a shop's attribution settings; a shop that recorded
// none has the default window (domain.DefaultLookback, the projector's
// default as cmd wires it).
func (q *Queries) Settings(ctx context.Context, shop string) (Settings, error) {
	s := Settings{ShopID: shop, Lookback: domain.DefaultLookback}
	var secs, changed int64
	err := q.db.QueryRowContext(ctx, `SELECT lookback_seconds, changed_at FROM attribution_settings WHERE shop_id = ?`, shop).
		Scan(&secs, &changed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return s, nil
	case err != nil:
		return s, fmt.Errorf("attribution settings of %s: %w", shop, err)
	}
	s.Lookback, s.Custom, s.ChangedAt = time.Duration(secs)*time.Second, true, readmodel.Time(changed)
	return s, nil
}

// LinkedVisitors returns the anonymous ids linked to a customer, sorted.
func (q *Queries) LinkedVisitors(ctx context.Context, shop, customer string) ([]string, error) {
	out, err := readmodel.Strings(ctx, q.db, `SELECT anonymous_id FROM identity_links WHERE shop_id = ? AND customer_id = ?
		ORDER BY anonymous_id`, shop, customer)
	if err != nil {
		return nil, fmt.Errorf("identity links of a customer: %w", err)
	}
	return out, nil
}
