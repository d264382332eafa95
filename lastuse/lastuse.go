// Package lastuse keeps the last-used time and client address of every
// admin token, and the number of admitted admin API requests per shop,
// token and billing period (table request_counts), in an SQLite file of
// the data directory (lastuse.db). The server writes it in coalesced
// batches (auth.LastUsed); `cgp tokens list` and GET /api/v1/usage read
// it. It is not part of the event log on purpose: one event per request
// would drown the history. It imports auth.
package lastuse

import (
	"context"
	"database/sql"
	"fmt"
	"net/netip"
	"net/url"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/internal/sqlitedb"
)

// Store is the SQLite last-use store.
type Store struct {
	db *sql.DB
}

var (
	_ auth.UseStore  = (*Store)(nil)
	_ auth.UseReader = (*Store)(nil)
)

// Open opens or creates the store at path.
func Open(path string) (*Store, error) {
	if err := sqlitedb.PrivateFile(path); err != nil {
		return nil, fmt.Errorf("open last-use store: %w", err)
	}
	dsn := "file:" + url.PathEscape(path) + "?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000&_txlock=immediate"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("open last-use store: %w", err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS last_used (
		token_id TEXT PRIMARY KEY,
		at       INTEGER NOT NULL,
		ip       TEXT NOT NULL
	);
	CREATE TABLE IF NOT EXISTS request_counts (
		shop_id  TEXT NOT NULL,
		token_id TEXT NOT NULL,
		period   INTEGER NOT NULL, -- YYYYMM, a calendar month in UTC
		count    INTEGER NOT NULL,
		PRIMARY KEY (shop_id, period, token_id)
	) WITHOUT ROWID`); err != nil {
		db.Close()
		return nil, fmt.Errorf("open last-use store: %w", err)
	}
	return &Store{db: db}, nil
}

// SaveUses implements auth.UseStore: newer uses replace older ones and
// counts are added to the stored ones, all in one transaction.
func (s *Store) SaveUses(ctx context.Context, uses []auth.Use, counts []auth.RequestCount) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save last uses: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO last_used (token_id, at, ip) VALUES (?, ?, ?)
		ON CONFLICT (token_id) DO UPDATE SET at = excluded.at, ip = excluded.ip WHERE excluded.at > last_used.at`)
	if err != nil {
		return fmt.Errorf("save last uses: %w", err)
	}
	defer stmt.Close()
	for _, u := range uses {
		ip := ""
		if u.IP.IsValid() {
			ip = u.IP.String()
		}
		if _, err := stmt.ExecContext(ctx, u.TokenID, u.At.UnixMicro(), ip); err != nil {
			return fmt.Errorf("save last uses: %w", err)
		}
	}
	if len(counts) > 0 {
		add, err := tx.PrepareContext(ctx, `INSERT INTO request_counts (shop_id, token_id, period, count) VALUES (?, ?, ?, ?)
			ON CONFLICT (shop_id, period, token_id) DO UPDATE SET count = request_counts.count + excluded.count`)
		if err != nil {
			return fmt.Errorf("save request counts: %w", err)
		}
		defer add.Close()
		for _, c := range counts {
			if _, err := add.ExecContext(ctx, c.ShopID, c.TokenID, int64(c.Period), c.Count); err != nil {
				return fmt.Errorf("save request counts: %w", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save last uses: %w", err)
	}
	return nil
}

// RequestCounts implements auth.UseReader: the stored request count of
// each token of shopID in period.
func (s *Store) RequestCounts(ctx context.Context, shopID string, period auth.Period) (map[string]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT token_id, count FROM request_counts WHERE shop_id = ? AND period = ?`, shopID, int64(period))
	if err != nil {
		return nil, fmt.Errorf("request counts: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("request counts: %w", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("request counts: %w", err)
	}
	return out, nil
}

// Get returns the last use of a token (ok false when never used).
func (s *Store) Get(ctx context.Context, tokenID string) (u auth.Use, ok bool, err error) {
	var at int64
	var ip string
	err = s.db.QueryRowContext(ctx, `SELECT at, ip FROM last_used WHERE token_id = ?`, tokenID).Scan(&at, &ip)
	if err == sql.ErrNoRows {
		return auth.Use{}, false, nil
	}
	if err != nil {
		return auth.Use{}, false, fmt.Errorf("last use of %s: %w", tokenID, err)
	}
	u = auth.Use{TokenID: tokenID, At: time.UnixMicro(at).UTC()}
	u.IP, _ = netip.ParseAddr(ip)
	return u, true, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }
