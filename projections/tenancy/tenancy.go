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
`}, {Version: 2, SQL: `
ALTER TABLE tokens ADD COLUMN account_id TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN master INTEGER NOT NULL DEFAULT 0;
CREATE TABLE public_keys (
	key_id      TEXT PRIMARY KEY,
	shop_id     TEXT NOT NULL,
	hash        TEXT NOT NULL UNIQUE,
	environment TEXT NOT NULL,
	created_at  INTEGER NOT NULL
);
CREATE TABLE image_keys (
	key_id     TEXT PRIMARY KEY,
	shop_id    TEXT NOT NULL,
	hash       TEXT NOT NULL UNIQUE,
	scopes     TEXT,            -- NULL: no scopes recorded (legacy, unrestricted)
	imported   INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL
);
`}, {Version: 3, SQL: `
ALTER TABLE shops ADD COLUMN granted_scopes TEXT NOT NULL DEFAULT '[]';
`}, {Version: 4, SQL: `
ALTER TABLE shops ADD COLUMN uninstalled_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE shops ADD COLUMN retention_due_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE shops ADD COLUMN app_subscription_id TEXT NOT NULL DEFAULT '';
ALTER TABLE shops ADD COLUMN app_subscription_name TEXT NOT NULL DEFAULT '';
ALTER TABLE shops ADD COLUMN app_subscription_status TEXT NOT NULL DEFAULT '';
CREATE INDEX shops_retention_due ON shops (retention_due_at) WHERE retention_due_at > 0;
`}, {Version: 5, SQL: `
CREATE TABLE erased_shops (
	shop_id   TEXT PRIMARY KEY,
	erased_at INTEGER NOT NULL
);
`}, {Version: 6, SQL: creditsSQL}, {Version: 7, SQL: storefrontSQL}, {Version: 8, SQL: platformSQL}, {Version: 9, SQL: usersSQL}, {Version: 10, SQL: tokenListSQL}, {Version: 11, SQL: invitationsSQL}, {Version: 12, SQL: `ALTER TABLE image_keys ADD COLUMN revoked_at INTEGER NOT NULL DEFAULT 0;`}}

// SecretLabel binds the sealed webhook secret of shops.webhook_secret
// (envelope.Codec.SealSecret): Shop.WebhookSecret is sealed, and the
// receiver opens it with the same label.
const SecretLabel = "shops.webhook_secret"

// Projector returns the tenancy projector. changed, when not nil, is
// called after each committed tenancy event (so credential caches can be
// dropped).
func Projector(codec *envelope.Codec, changed func()) projections.Projector {
	p := projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle: cases.Handle(codec, func(apply projections.DecodedHandler) projections.DecodedHandler {
			return projections.Sealing(codec, SecretLabel, projections.WrapErrors("tenancy", apply))
		}),
	}
	if changed != nil {
		want := map[string]bool{}
		for _, t := range cases.Types() {
			want[t] = !creditTypes[t]
		}
		p.Committed = func(e eventlog.Event) {
			if want[e.Type] {
				changed()
			}
		}
	}
	return p
}

// cases fold each event type.
var cases = projections.NewTxCases(append([]projections.TxCase{
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.AccountCreated, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO accounts (account_id, name, plan, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (account_id) DO NOTHING`, ev.AccountID, ev.Name, string(ev.Plan), ev.CreatedAt.UnixMicro())
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopCreated, _ *projections.DecodedEvent) error {
		cors, _ := json.Marshal(ev.CORSAllowList)
		_, err := tx.ExecContext(ctx, `INSERT INTO shops (shop_id, account_id, domain, plan, webhook_secret, contact_email, cors_allow_list, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shop_id) DO NOTHING`,
			ev.ShopID, ev.AccountID, ev.Domain, string(ev.Plan), ev.WebhookSecret, ev.ContactEmail, string(cors), ev.CreatedAt.UnixMicro())
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopPlanChanged, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE shops SET plan = ? WHERE shop_id = ?`, string(ev.Plan), ev.ShopID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.AppUninstalled, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE shops SET uninstalled_at = ?, retention_due_at = ? WHERE shop_id = ?`,
			ev.UninstalledAt.UnixMicro(), ev.RetentionDueAt.UnixMicro(), ev.ShopID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.AppReinstalled, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE shops SET uninstalled_at = 0, retention_due_at = 0 WHERE shop_id = ?`, ev.ShopID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		return eraseShop(ctx, tx, ev)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.AppSubscriptionUpdated, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE shops SET app_subscription_id = ?, app_subscription_name = ?, app_subscription_status = ?
			WHERE shop_id = ?`, ev.SubscriptionID, ev.Name, ev.Status, ev.ShopID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.TokenIssued, _ *projections.DecodedEvent) error {
		scopes, _ := json.Marshal(ev.Scopes)
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens (token_id, shop_id, hash, name, scopes, environment, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (token_id) DO NOTHING`,
			ev.TokenID, ev.ShopID, ev.Hash, ev.Name, string(scopes), ev.Environment, ev.CreatedAt.UnixMicro())
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MasterTokenIssued, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens (token_id, shop_id, account_id, master, hash, name, scopes, environment, created_at)
			VALUES (?, '', ?, 1, ?, ?, '[]', ?, ?) ON CONFLICT (token_id) DO NOTHING`,
			ev.TokenID, ev.AccountID, ev.Hash, ev.Name, ev.Environment, ev.CreatedAt.UnixMicro())
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.TokenRotated, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE tokens SET hash = ?, rotated_at = ? WHERE token_id = ?`, ev.Hash, ev.RotatedAt.UnixMicro(), ev.TokenID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.TokenRevoked, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at = 0`, ev.RevokedAt.UnixMicro(), ev.TokenID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.PublicKeyIssued, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO public_keys (key_id, shop_id, hash, environment, last4, created_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (key_id) DO NOTHING`, ev.KeyID, ev.ShopID, ev.Hash, ev.Environment, ev.Last4, ev.CreatedAt.UnixMicro())
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ImageKeyRevoked, _ *projections.DecodedEvent) error {
		_, err := tx.ExecContext(ctx, `UPDATE image_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at = 0`, ev.RevokedAt.UnixMicro(), ev.KeyID)
		return err
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ImageKeyIssued, _ *projections.DecodedEvent) error {
		var scopes any // NULL when no scopes are recorded
		if ev.Scopes.Recorded {
			b, _ := json.Marshal(ev.Scopes)
			scopes = string(b)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO image_keys (key_id, shop_id, hash, scopes, imported, created_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (key_id) DO NOTHING`, ev.KeyID, ev.ShopID, ev.Hash, scopes, ev.Imported, ev.CreatedAt.UnixMicro())
		return err
	}),
}, append(append(append(append(creditCases(), storefrontCases()...), platformCases()...), userCases()...), invitationCases()...)...)...)

// Shop is a shop as authentication and the receivers need it.
type Shop struct {
	ID            string
	AccountID     string
	Domain        string
	Plan          domain.Plan
	WebhookSecret string
}

// Token is an admin token as authentication needs it, with its shop's
// plan (a master token has an account and no shop).
type Token struct {
	ID          string
	ShopID      string
	AccountID   string
	Master      bool
	Hash        string
	Scopes      []domain.Scope
	Environment string
	CreatedAt   time.Time
	Revoked     bool
	ShopPlan    domain.Plan
	Name        string
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
	var plan sql.NullString
	err := q.db.QueryRowContext(ctx, `SELECT t.token_id, t.shop_id, t.account_id, t.master, t.hash, t.name, t.scopes, t.environment,
		t.created_at, t.revoked_at, s.plan FROM tokens t LEFT JOIN shops s ON s.shop_id = t.shop_id WHERE t.hash = ?`, hash).
		Scan(&t.ID, &t.ShopID, &t.AccountID, &t.Master, &t.Hash, &t.Name, &scopes, &t.Environment, &created, &revoked, &plan)
	t.ShopPlan = domain.Plan(plan.String)
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

// PublicKey is a storefront key.
type PublicKey struct {
	ID, ShopID, Hash string
}

// PublicKeyByHash returns the public key whose SHA-256 is hash (a
// revoked key, or the old secret of a rotated one, is not found).
func (q *Queries) PublicKeyByHash(ctx context.Context, hash string) (*PublicKey, error) {
	var k PublicKey
	err := q.db.QueryRowContext(ctx, `SELECT key_id, shop_id, hash FROM public_keys WHERE hash = ? AND revoked_at = 0`, hash).
		Scan(&k.ID, &k.ShopID, &k.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("public key")
	}
	if err != nil {
		return nil, fmt.Errorf("find public key: %w", err)
	}
	return &k, nil
}

// ImageKey is an image-operations API key with its stored scope state.
type ImageKey struct {
	ID, ShopID, Hash string
	Scopes           domain.ImageScopes
}

// ImageKeyByHash returns the image key whose SHA-256 is hash.
func (q *Queries) ImageKeyByHash(ctx context.Context, hash string) (*ImageKey, error) {
	var k ImageKey
	var scopes sql.NullString
	err := q.db.QueryRowContext(ctx, `SELECT key_id, shop_id, hash, scopes FROM image_keys WHERE hash = ? AND revoked_at = 0`, hash).Scan(&k.ID, &k.ShopID, &k.Hash, &scopes)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("image key")
	}
	if err != nil {
		return nil, fmt.Errorf("find image key: %w", err)
	}
	if scopes.Valid {
		if err := json.Unmarshal([]byte(scopes.String), &k.Scopes); err != nil {
			return nil, fmt.Errorf("image key %s scopes: %w", k.ID, err)
		}
	}
	return &k, nil
}

// ImageKeyInfo is an image-operations API key in a shop's list: never
// its hash.
type ImageKeyInfo struct {
	ID        string
	Scopes    domain.ImageScopes
	Imported  bool
	CreatedAt time.Time
	RevokedAt time.Time // zero: active
}

// ShopImageKeys lists a shop's image-API keys, the newest first.
func (q *Queries) ShopImageKeys(ctx context.Context, shop string) ([]ImageKeyInfo, error) {
	return readmodel.List(ctx, q.db, "image keys", func(sc readmodel.Scanner) (ImageKeyInfo, error) {
		var k ImageKeyInfo
		var scopes sql.NullString
		var created, revoked int64
		if err := sc.Scan(&k.ID, &scopes, &k.Imported, &created, &revoked); err != nil {
			return k, err
		}
		if revoked != 0 {
			k.RevokedAt = readmodel.Time(revoked)
		}
		if scopes.Valid {
			if err := json.Unmarshal([]byte(scopes.String), &k.Scopes); err != nil {
				return k, fmt.Errorf("image key %s scopes: %w", k.ID, err)
			}
		}
		k.CreatedAt = readmodel.Time(created)
		return k, nil
	}, `SELECT key_id, scopes, imported, created_at, revoked_at FROM image_keys WHERE shop_id = ? ORDER BY created_at DESC, key_id DESC`, shop)
}

// TokenByID returns a token by id (revoked ones too).
func (q *Queries) TokenByID(ctx context.Context, id string) (*Token, error) {
	var hash string
	err := q.db.QueryRowContext(ctx, `SELECT hash FROM tokens WHERE token_id = ?`, id).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("token")
	}
	if err != nil {
		return nil, fmt.Errorf("find token: %w", err)
	}
	return q.TokenByHash(ctx, hash)
}

// ShopCORS returns the shop on a domain with its CORS allow-list.
func (q *Queries) ShopCORS(ctx context.Context, d string) (string, []string, error) {
	var id, cors string
	err := q.db.QueryRowContext(ctx, `SELECT shop_id, cors_allow_list FROM shops WHERE domain = ?`, domain.NormalizeDomain(d)).Scan(&id, &cors)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, domain.NotFound("shop")
	}
	if err != nil {
		return "", nil, fmt.Errorf("find shop: %w", err)
	}
	var list []string
	if err := json.Unmarshal([]byte(cors), &list); err != nil {
		return "", nil, fmt.Errorf("shop %s cors list: %w", id, err)
	}
	return id, list, nil
}

// OriginAllowed reports whether a shop is on host or lists it in its CORS
// allow-list.
func (q *Queries) OriginAllowed(ctx context.Context, host string) (bool, error) {
	var one int
	err := q.db.QueryRowContext(ctx, `SELECT 1 FROM shops WHERE domain = ?1
		UNION ALL SELECT 1 FROM shops, json_each(shops.cors_allow_list) WHERE json_each.value = ?1 LIMIT 1`, host).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("origin lookup: %w", err)
	}
	return true, nil
}

// Install is a shop's install state and app subscription.
type Install struct {
	Installed          bool
	UninstalledAt      time.Time // zero while installed
	RetentionDueAt     time.Time // when the shop's data is erased; zero while installed
	SubscriptionID     string
	SubscriptionName   string
	SubscriptionStatus string
	Plan               domain.Plan
}

// ShopInstall returns a shop's install state.
func (q *Queries) ShopInstall(ctx context.Context, shopID string) (Install, error) {
	var in Install
	var uninstalled, due int64
	var plan string
	err := q.db.QueryRowContext(ctx, `SELECT uninstalled_at, retention_due_at, app_subscription_id, app_subscription_name,
		app_subscription_status, plan FROM shops WHERE shop_id = ?`, shopID).
		Scan(&uninstalled, &due, &in.SubscriptionID, &in.SubscriptionName, &in.SubscriptionStatus, &plan)
	if errors.Is(err, sql.ErrNoRows) {
		return Install{}, domain.NotFound("shop")
	}
	if err != nil {
		return Install{}, fmt.Errorf("shop install: %w", err)
	}
	in.Installed, in.Plan = uninstalled == 0, domain.Plan(plan)
	if uninstalled != 0 {
		in.UninstalledAt = time.UnixMicro(uninstalled).UTC()
		in.RetentionDueAt = time.UnixMicro(due).UTC()
	}
	return in, nil
}

// RetentionDue lists the shops whose post-uninstall retention ended at or
// before now (the erasure job's work list).
func (q *Queries) RetentionDue(ctx context.Context, now time.Time) ([]string, error) {
	out, err := readmodel.Strings(ctx, q.db, `SELECT shop_id FROM shops WHERE retention_due_at > 0 AND retention_due_at <= ?
		ORDER BY retention_due_at, shop_id`, now.UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("retention due: %w", err)
	}
	return out, nil
}
