// Package intelligence is the read model of SEO keyword rankings (latest
// position, previous one and the change; every daily ranking, which the
// theme regression incidents compare) and of decision-intelligence runs.
package intelligence

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name.
const Name = "intelligence"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE seo_rankings (
	keyword_id    TEXT NOT NULL,
	date          TEXT NOT NULL,
	shop_id       TEXT NOT NULL,
	position      REAL NOT NULL,
	search_volume INTEGER NOT NULL,
	clicks        INTEGER NOT NULL,
	impressions   INTEGER NOT NULL,
	version       INTEGER NOT NULL,
	PRIMARY KEY (keyword_id, date)
);
-- One row per keyword and URL: its latest ranking and the one before.
-- change = previous_position - position (positive: moved up); 0 without a
-- previous ranking.
CREATE TABLE seo_keywords (
	keyword_id        TEXT PRIMARY KEY,
	shop_id           TEXT NOT NULL,
	keyword           TEXT NOT NULL,
	url               TEXT NOT NULL,
	position          REAL NOT NULL,
	position_date     TEXT NOT NULL,
	previous_position REAL,
	previous_date     TEXT,
	change            REAL NOT NULL DEFAULT 0,
	search_volume     INTEGER NOT NULL,
	clicks            INTEGER NOT NULL,
	impressions       INTEGER NOT NULL,
	rankings          INTEGER NOT NULL,
	version           INTEGER NOT NULL
);
CREATE INDEX seo_keywords_position ON seo_keywords (shop_id, position, keyword_id);
CREATE INDEX seo_keywords_change ON seo_keywords (shop_id, change, keyword_id);
CREATE INDEX seo_keywords_volume ON seo_keywords (shop_id, search_volume, keyword_id);
CREATE INDEX seo_keywords_keyword ON seo_keywords (shop_id, keyword, keyword_id);
CREATE TABLE decision_runs (
	run_id          TEXT PRIMARY KEY,
	shop_id         TEXT NOT NULL,
	status          TEXT NOT NULL,
	trigger_name    TEXT NOT NULL DEFAULT '',
	reason          TEXT NOT NULL DEFAULT '',
	recommendations TEXT NOT NULL DEFAULT '[]',
	started_at      INTEGER NOT NULL,
	finished_at     INTEGER NOT NULL DEFAULT 0,
	version         INTEGER NOT NULL
);
CREATE INDEX decision_runs_started ON decision_runs (shop_id, started_at, run_id);
CREATE INDEX decision_runs_status ON decision_runs (shop_id, status, started_at, run_id);
`}, {Version: 2, SQL: `
-- A shop's rankings of a date range (the theme regression incidents).
CREATE INDEX seo_rankings_shop_date ON seo_rankings (shop_id, date);
`}}

// Projector returns the intelligence projector.
func Projector(codec *envelope.Codec) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle:     cases.Handle(codec, nil),
	}
}

// cases fold each event type.
var cases = projections.NewTxCases(
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID,
			readmodel.ShopRows("seo_rankings"), readmodel.ShopRows("seo_keywords"), readmodel.ShopRows("decision_runs"))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.KeywordRankingRecorded, e *projections.DecodedEvent) error {
		return applyRanking(ctx, tx, ev, e.Position)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.DecisionRunStarted, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO decision_runs (run_id, shop_id, status, trigger_name, started_at, version)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`,
			ev.RunID, ev.ShopID, domain.RunRunning, ev.Trigger, readmodel.Micros(ev.StartedAt), e.Position)
		return wrap(err, "start run")
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.DecisionRunCompleted, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE decision_runs SET status = ?, recommendations = ?, finished_at = ?, version = ?
			WHERE run_id = ? AND shop_id = ? AND version < ?`,
			domain.RunCompleted, readmodel.JSONText(ev.Recommendations, "[]"), readmodel.Micros(ev.FinishedAt), e.Position,
			ev.RunID, ev.ShopID, e.Position)
		return wrap(err, "complete run")
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.DecisionRunFailed, e *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE decision_runs SET status = ?, reason = ?, finished_at = ?, version = ?
			WHERE run_id = ? AND shop_id = ? AND version < ?`,
			domain.RunFailed, ev.Reason, readmodel.Micros(ev.FinishedAt), e.Position, ev.RunID, ev.ShopID, e.Position)
		return wrap(err, "fail run")
	}),
)

// applyRanking records a ranking and recomputes its keyword's row from the
// two latest dates, so rankings may arrive in any date order.
func applyRanking(ctx context.Context, tx *sql.Tx, ev *domain.KeywordRankingRecorded, pos eventlog.Position) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO seo_rankings (keyword_id, date, shop_id, position, search_volume, clicks, impressions, version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (keyword_id, date) DO NOTHING`,
		ev.KeywordID, ev.Date, ev.ShopID, ev.Position, ev.SearchVolume, ev.Clicks, ev.Impressions, pos); err != nil {
		return fmt.Errorf("record ranking: %w", err)
	}
	_, err := tx.ExecContext(ctx, `
INSERT INTO seo_keywords (keyword_id, shop_id, keyword, url, position, position_date, previous_position, previous_date, change,
	search_volume, clicks, impressions, rankings, version)
SELECT ?, ?, ?, ?, l.position, l.date, p.position, p.date, COALESCE(ROUND(p.position - l.position, 2), 0),
	l.search_volume, l.clicks, l.impressions, (SELECT COUNT(*) FROM seo_rankings WHERE keyword_id = ?), ?
FROM (SELECT * FROM seo_rankings WHERE keyword_id = ? ORDER BY date DESC LIMIT 1) l
LEFT JOIN (SELECT * FROM seo_rankings WHERE keyword_id = ? ORDER BY date DESC LIMIT 1 OFFSET 1) p ON 1
WHERE 1
ON CONFLICT (keyword_id) DO UPDATE SET position = excluded.position, position_date = excluded.position_date,
	previous_position = excluded.previous_position, previous_date = excluded.previous_date, change = excluded.change,
	search_volume = excluded.search_volume, clicks = excluded.clicks, impressions = excluded.impressions,
	rankings = excluded.rankings, version = excluded.version`,
		ev.KeywordID, ev.ShopID, ev.Keyword, ev.URL, ev.KeywordID, pos, ev.KeywordID, ev.KeywordID)
	return wrap(err, "update keyword")
}

func wrap(err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
