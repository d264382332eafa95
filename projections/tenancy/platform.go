package tenancy

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// platformSQL keeps whether a shop's platform grant is known and the
// shop's platform session (its tokens sealed, see SecretLabel).
const platformSQL = `
ALTER TABLE shops ADD COLUMN scopes_known INTEGER NOT NULL DEFAULT 0;
UPDATE shops SET scopes_known = 1 WHERE granted_scopes <> '[]';
ALTER TABLE shops ADD COLUMN grant_key TEXT NOT NULL DEFAULT '';
ALTER TABLE shops ADD COLUMN webhooks_grant TEXT NOT NULL DEFAULT '';
CREATE TABLE platform_sessions (
	shop_id            TEXT PRIMARY KEY,
	access_token       TEXT NOT NULL,
	refresh_token      TEXT NOT NULL,
	scopes             TEXT NOT NULL,
	expires_at         INTEGER NOT NULL,
	refresh_expires_at INTEGER NOT NULL,
	stored_at          INTEGER NOT NULL,
	version            INTEGER NOT NULL
);
`

// platformCases fold the install and session events.
func platformCases() []projections.TxCase {
	return []projections.TxCase{
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.AppInstalled, _ *projections.DecodedEvent) error {
			granted, _ := json.Marshal(nonNil(ev.Granted))
			_, err := tx.ExecContext(ctx, `UPDATE shops SET granted_scopes = ?, scopes_known = 1, grant_key = ?,
				webhook_secret = CASE WHEN ? = '' THEN webhook_secret ELSE ? END WHERE shop_id = ?`,
				string(granted), domain.GrantKey(ev.Granted), ev.WebhookSecret, ev.WebhookSecret, ev.ShopID)
			return err
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopScopesUpdated, _ *projections.DecodedEvent) error {
			granted, _ := json.Marshal(nonNil(ev.Granted))
			_, err := tx.ExecContext(ctx, `UPDATE shops SET granted_scopes = ?, scopes_known = 1, grant_key = ? WHERE shop_id = ?`,
				string(granted), domain.GrantKey(ev.Granted), ev.ShopID)
			return err
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.PlatformWebhooksRegistered, _ *projections.DecodedEvent) error {
			_, err := tx.ExecContext(ctx, `UPDATE shops SET webhooks_grant = ? WHERE shop_id = ?`, strings.Join(ev.Grant, ","), ev.ShopID)
			return err
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.PlatformSessionStored, e *projections.DecodedEvent) error {
			scopes, _ := json.Marshal(nonNil(ev.Scopes))
			_, err := tx.ExecContext(ctx, `INSERT INTO platform_sessions (shop_id, access_token, refresh_token, scopes, expires_at,
				refresh_expires_at, stored_at, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (shop_id) DO UPDATE SET access_token = excluded.access_token, refresh_token = excluded.refresh_token,
					scopes = excluded.scopes, expires_at = excluded.expires_at, refresh_expires_at = excluded.refresh_expires_at,
					stored_at = excluded.stored_at, version = excluded.version
				WHERE platform_sessions.version < excluded.version`,
				ev.ShopID, ev.AccessToken, ev.RefreshToken, string(scopes), readmodel.Micros(ev.ExpiresAt),
				readmodel.Micros(ev.RefreshExpiresAt), readmodel.Micros(ev.StoredAt), int64(e.Position))
			return err
		}),
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// PlatformScopes is what a shop granted the app on the commerce platform.
type PlatformScopes struct {
	// Known is false for a shop whose grant was never reported (created
	// by an operator, never installed through the platform's OAuth flow
	// nor updated by app/scopes_update).
	Known bool
	// Granted is the scope list as the platform stored it; Implied expands
	// write_X to read_X.
	Granted, Implied []string
}

// Missing lists the declared scopes the grant does not cover (all of them
// while the grant is not known).
func (p PlatformScopes) Missing(declared []string) []string {
	return domain.MissingPlatformScopes(declared, p.Granted)
}

// Has reports whether scope is in the implied grant.
func (p PlatformScopes) Has(scope string) bool { return domain.PlatformScopeGranted(p.Granted, scope) }

// ShopPlatformScopes returns the scopes a shop granted, compared on the
// implied set.
func (q *Queries) ShopPlatformScopes(ctx context.Context, shopID string) (PlatformScopes, error) {
	var raw string
	var known bool
	err := q.db.QueryRowContext(ctx, `SELECT granted_scopes, scopes_known FROM shops WHERE shop_id = ?`, shopID).Scan(&raw, &known)
	if errors.Is(err, sql.ErrNoRows) {
		return PlatformScopes{}, domain.NotFound("shop")
	}
	if err != nil {
		return PlatformScopes{}, fmt.Errorf("shop scopes: %w", err)
	}
	var granted []string
	if err := json.Unmarshal([]byte(raw), &granted); err != nil {
		return PlatformScopes{}, fmt.Errorf("shop %s scopes: %w", shopID, err)
	}
	return PlatformScopes{Known: known, Granted: granted, Implied: domain.ImpliedPlatformScopes(granted)}, nil
}

// KnownGrant is a shop whose platform grant is known, with that grant.
type KnownGrant struct {
	ShopID, Domain string
	Granted        []string
}

// KnownGrants lists the installed shops whose grant is known, by shop id
// (the re-consent check's work list).
func (q *Queries) KnownGrants(ctx context.Context) ([]KnownGrant, error) {
	return readmodel.List(ctx, q.db, "known grants", func(s readmodel.Scanner) (KnownGrant, error) {
		var g KnownGrant
		var raw string
		if err := s.Scan(&g.ShopID, &g.Domain, &raw); err != nil {
			return KnownGrant{}, err
		}
		return g, json.Unmarshal([]byte(raw), &g.Granted)
	}, `SELECT shop_id, domain, granted_scopes FROM shops WHERE scopes_known = 1 AND uninstalled_at = 0 ORDER BY shop_id`)
}

// Session is a shop's stored platform session; its tokens are sealed
// (open them with SecretLabel).
type Session struct {
	ShopID                      string
	AccessToken, RefreshToken   string
	Scopes                      []string
	ExpiresAt, RefreshExpiresAt time.Time // zero: does not expire
	StoredAt                    time.Time
}

// PlatformSession returns a shop's stored session (not found without one).
func (q *Queries) PlatformSession(ctx context.Context, shopID string) (*Session, error) {
	var s Session
	var scopes string
	var exp, rexp, stored int64
	err := q.db.QueryRowContext(ctx, `SELECT shop_id, access_token, refresh_token, scopes, expires_at, refresh_expires_at, stored_at
		FROM platform_sessions WHERE shop_id = ?`, shopID).Scan(&s.ShopID, &s.AccessToken, &s.RefreshToken, &scopes, &exp, &rexp, &stored)
	if err := readmodel.FindError(err, "platform session"); err != nil {
		return nil, err
	}
	s.ExpiresAt, s.RefreshExpiresAt, s.StoredAt = readmodel.Time(exp), readmodel.Time(rexp), readmodel.Time(stored)
	return &s, json.Unmarshal([]byte(scopes), &s.Scopes)
}

// PendingRegistration is a shop whose webhook subscriptions on the
// platform lag its grant.
type PendingRegistration struct {
	ShopID, Domain string
	Granted        []string
}

// PendingRegistrations lists the installed shops with a session whose
// last webhook registration was for another grant (or none).
func (q *Queries) PendingRegistrations(ctx context.Context) ([]PendingRegistration, error) {
	return readmodel.List(ctx, q.db, "pending registrations", func(s readmodel.Scanner) (PendingRegistration, error) {
		var p PendingRegistration
		var raw string
		if err := s.Scan(&p.ShopID, &p.Domain, &raw); err != nil {
			return PendingRegistration{}, err
		}
		return p, json.Unmarshal([]byte(raw), &p.Granted)
	}, `SELECT s.shop_id, s.domain, s.granted_scopes FROM shops s JOIN platform_sessions p ON p.shop_id = s.shop_id
		WHERE s.scopes_known = 1 AND s.uninstalled_at = 0 AND s.grant_key <> s.webhooks_grant ORDER BY s.shop_id`)
}

// HasSession reports whether a shop has a stored platform session.
func (q *Queries) HasSession(ctx context.Context, shopID string) (bool, error) {
	var n int
	err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM platform_sessions WHERE shop_id = ?`, shopID).Scan(&n)
	return n > 0, err
}
