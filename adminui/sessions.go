package adminui

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"github.com/cgp-platform/cgp/internal/sqlitedb"
)

// Session lifetimes: a session ends after IdleTimeout without a request,
// and AbsoluteTimeout after the sign-in whatever its use.
const (
	IdleTimeout     = 12 * time.Hour
	AbsoluteTimeout = 7 * 24 * time.Hour
)

// SessionStore keeps the admin interface's server-side sessions: Sessions
// (a SQLite file of the server) or, for several servers, a shared store
// (adminui/redissessions). Each keeps only the SHA-256 of a session id
// (SessionHash) and applies IdleTimeout and AbsoluteTimeout.
type SessionStore interface {
	// Create starts a session of user and returns its id (NewSessionID).
	Create(ctx context.Context, userID string) (string, error)
	// Lookup returns the user of a live session and records its use; an
	// unknown or expired id returns "".
	Lookup(ctx context.Context, raw string) (string, error)
	// Delete ends a session.
	Delete(ctx context.Context, raw string) error
	Close() error
}

// NewSessionID returns a new session id: 32 random bytes, base64url.
func NewSessionID() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// SessionHash is what a store keeps of a session id: its SHA-256, hex.
func SessionHash(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// ValidSessionID reports whether raw may be a session id at all (a
// longer cookie is not looked up).
func ValidSessionID(raw string) bool { return raw != "" && len(raw) <= 100 }

// Expired reports whether a session created and last seen at these times
// has ended at now.
func Expired(created, lastSeen, now time.Time) bool {
	return now.Sub(lastSeen) > IdleTimeout || now.Sub(created) > AbsoluteTimeout
}

// Sessions is the admin interface's server-side session store: a SQLite
// file of its own (DATA_DIR/sessions.db, 0600). A session id is 32 random
// bytes; only its SHA-256 is stored, so the file alone signs nobody in.
type Sessions struct {
	db  *sql.DB
	now func() time.Time
}

// OpenSessions opens (creating) the session store at path. now is the
// clock of the expiries (nil: time.Now).
func OpenSessions(path string, now func() time.Time) (*Sessions, error) {
	if now == nil {
		now = time.Now
	}
	if err := sqlitedb.PrivateFile(path); err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	dsn := "file:" + url.PathEscape(path) + "?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000&_txlock=immediate"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS sessions (
		id_hash      TEXT PRIMARY KEY, -- hex SHA-256 of the session id
		user_id      TEXT NOT NULL,
		created_at   INTEGER NOT NULL,
		last_seen_at INTEGER NOT NULL
	) WITHOUT ROWID;
	CREATE INDEX IF NOT EXISTS sessions_user ON sessions (user_id)`); err != nil {
		return nil, errors.Join(fmt.Errorf("open session store: %w", err), db.Close())
	}
	return &Sessions{db: db, now: now}, nil
}

// Close closes the store.
func (s *Sessions) Close() error { return s.db.Close() }

// Create starts a session of user and returns its id (shown to the browser
// once, in the cookie). Expired sessions are swept on the way.
func (s *Sessions) Create(ctx context.Context, userID string) (string, error) {
	raw, err := NewSessionID()
	if err != nil {
		return "", err
	}
	now := s.now()
	if _, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE last_seen_at < ? OR created_at < ?`,
		now.Add(-IdleTimeout).UnixMicro(), now.Add(-AbsoluteTimeout).UnixMicro()); err != nil {
		return "", fmt.Errorf("sweep sessions: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO sessions (id_hash, user_id, created_at, last_seen_at) VALUES (?, ?, ?, ?)`,
		SessionHash(raw), userID, now.UnixMicro(), now.UnixMicro()); err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	return raw, nil
}

// Lookup returns the user of a live session and records its use; an
// unknown or expired id returns "" (an expired one is deleted).
func (s *Sessions) Lookup(ctx context.Context, raw string) (string, error) {
	if !ValidSessionID(raw) {
		return "", nil
	}
	h := SessionHash(raw)
	var user string
	var created, seen int64
	err := s.db.QueryRowContext(ctx, `SELECT user_id, created_at, last_seen_at FROM sessions WHERE id_hash = ?`, h).Scan(&user, &created, &seen)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find session: %w", err)
	}
	now := s.now()
	if Expired(time.UnixMicro(created), time.UnixMicro(seen), now) {
		return "", s.delete(ctx, h)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE sessions SET last_seen_at = ? WHERE id_hash = ?`, now.UnixMicro(), h); err != nil {
		return "", fmt.Errorf("touch session: %w", err)
	}
	return user, nil
}

// Delete ends a session (sign-out, or the old session at a new sign-in).
func (s *Sessions) Delete(ctx context.Context, raw string) error {
	if raw == "" {
		return nil
	}
	return s.delete(ctx, SessionHash(raw))
}

func (s *Sessions) delete(ctx context.Context, h string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE id_hash = ?`, h); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}
