package tenancy

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name.
const Name = "tenancy"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE accounts (
	account_id TEXT PRIMARY KEY,
	name       TEXT NOT NULL,
	plan       TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE TABLE shops (
	shop_id         TEXT PRIMARY KEY,
	account_id      TEXT NOT NULL,
	domain          TEXT NOT NULL UNIQUE,
	plan            TEXT NOT NULL,
	webhook_secret  TEXT NOT NULL,
	contact_email   TEXT NOT NULL DEFAULT '',
	cors_allow_list TEXT NOT NULL DEFAULT '[]',
	created_at      INTEGER NOT NULL
);
CREATE TABLE tokens (
	token_id    TEXT PRIMARY KEY,
	shop_id     TEXT NOT NULL,
	hash        TEXT NOT NULL UNIQUE,
	name        TEXT NOT NULL,
	scopes      TEXT NOT NULL,
	environment TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	revoked_at  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX tokens_shop ON tokens (shop_id);
`}}

// Projector returns the tenancy projector.
func Projector(codec *envelope.Codec) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Handle: projections.Decoding(codec, []string{"AccountCreated", "ShopCreated", "TokenIssued"},
			func(ctx context.Context, tx *sql.Tx, _ *eventlog.Event, d envelope.Decoded) error {
				return apply(ctx, tx, d.Event)
			}),
	}
}

func apply(ctx context.Context, tx *sql.Tx, ev domain.Event) error {
	var err error
	switch ev := ev.(type) {
	case *domain.AccountCreated:
		_, err = tx.ExecContext(ctx, `INSERT INTO accounts (account_id, name, plan, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (account_id) DO NOTHING`, ev.AccountID, ev.Name, string(ev.Plan), ev.CreatedAt.UnixMicro())
	case *domain.ShopCreated:
		cors, _ := json.Marshal(ev.CORSAllowList)
		_, err = tx.ExecContext(ctx, `INSERT INTO shops (shop_id, account_id, domain, plan, webhook_secret, contact_email, cors_allow_list, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shop_id) DO NOTHING`,
			ev.ShopID, ev.AccountID, ev.Domain, string(ev.Plan), ev.WebhookSecret, ev.ContactEmail, string(cors), ev.CreatedAt.UnixMicro())
	case *domain.TokenIssued:
		scopes, _ := json.Marshal(ev.Scopes)
		_, err = tx.ExecContext(ctx, `INSERT INTO tokens (token_id, shop_id, hash, name, scopes, environment, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (token_id) DO NOTHING`,
			ev.TokenID, ev.ShopID, ev.Hash, ev.Name, string(scopes), ev.Environment, ev.CreatedAt.UnixMicro())
	}
	if err != nil {
		return fmt.Errorf("tenancy %s: %w", ev.EventType(), err)
	}
	return nil
}

// Shop is a shop as authentication and the receivers need it.
type Shop struct {
	ID            string
	AccountID     string
	Domain        string
	Plan          domain.Plan
	WebhookSecret string
}

// Token is an admin token as authentication needs it.
type Token struct {
	ID          string
	ShopID      string
	Hash        string
	Scopes      []domain.Scope
	Environment string
	CreatedAt   time.Time
	Revoked     bool
}

// Queries reads the tenancy read model.
type Queries struct {
	db *sql.DB
}

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// ShopByDomain returns the shop installed on a domain.
func (q *Queries) ShopByDomain(ctx context.Context, d string) (*Shop, error) {
	return q.shop(ctx, `domain = ?`, domain.NormalizeDomain(d))
}

// ShopByID returns a shop.
func (q *Queries) ShopByID(ctx context.Context, id string) (*Shop, error) {
	return q.shop(ctx, `shop_id = ?`, id)
}

func (q *Queries) shop(ctx context.Context, cond string, arg any) (*Shop, error) {
	var s Shop
	var plan string
	err := q.db.QueryRowContext(ctx, `SELECT shop_id, account_id, domain, plan, webhook_secret FROM shops WHERE `+cond, arg).
		Scan(&s.ID, &s.AccountID, &s.Domain, &plan, &s.WebhookSecret)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("shop")
	}
	if err != nil {
		return nil, fmt.Errorf("find shop: %w", err)
	}
	s.Plan = domain.Plan(plan)
	return &s, nil
}

// TokenByHash returns the token whose SHA-256 is hash.
func (q *Queries) TokenByHash(ctx context.Context, hash string) (*Token, error) {
	var t Token
	var scopes string
	var created, revoked int64
	err := q.db.QueryRowContext(ctx, `SELECT token_id, shop_id, hash, scopes, environment, created_at, revoked_at FROM tokens WHERE hash = ?`, hash).
		Scan(&t.ID, &t.ShopID, &t.Hash, &scopes, &t.Environment, &created, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("token")
	}
	if err != nil {
		return nil, fmt.Errorf("find token: %w", err)
	}
	if err := json.Unmarshal([]byte(scopes), &t.Scopes); err != nil {
		return nil, fmt.Errorf("token %s scopes: %w", t.ID, err)
	}
	t.CreatedAt = time.UnixMicro(created).UTC()
	t.Revoked = revoked != 0
	return &t, nil
}
