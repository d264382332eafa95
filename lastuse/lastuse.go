// Package lastuse keeps the last-used time and client address of every
// admin token in an SQLite file of the data directory (lastuse.db). The
// server writes it in coalesced batches (auth.LastUsed); `cgp tokens list`
// reads it. It is not part of the event log on purpose: one event per
// request would drown the history. It imports auth.
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
)

// Store is the SQLite last-use store.
type Store struct {
	db *sql.DB
}

var _ auth.UseStore = (*Store)(nil)

// Open opens or creates the store at path.
func Open(path string) (*Store, error) {
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
	)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("open last-use store: %w", err)
	}
	return &Store{db: db}, nil
}

// SaveUses implements auth.UseStore: newer uses replace older ones.
func (s *Store) SaveUses(ctx context.Context, uses []auth.Use) error {
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
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save last uses: %w", err)
	}
	return nil
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
