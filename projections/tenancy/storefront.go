package tenancy

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// storefrontSQL keeps what the public keys' list shows (issue 20, point
// 4): the key's last four characters, when it was rotated and revoked.
// A revoked key stays listed; PublicKeyByHash no longer finds it.
const storefrontSQL = `
ALTER TABLE public_keys ADD COLUMN last4 TEXT NOT NULL DEFAULT '';
ALTER TABLE public_keys ADD COLUMN rotated_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE public_keys ADD COLUMN revoked_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX public_keys_shop ON public_keys (shop_id);
`

// storefrontCases fold the changes of the CORS allow-list and of the
// public keys. Each is a credential change: the projector's changed
// callback runs after them.
func storefrontCases() []projections.TxCase {
	return []projections.TxCase{
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopOriginAllowed, _ *projections.DecodedEvent) error {
			return editAllowList(ctx, tx, ev.ShopID, func(list []string) []string {
				if slices.Contains(list, ev.Host) {
					return list
				}
				return append(list, ev.Host)
			})
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopOriginRemoved, _ *projections.DecodedEvent) error {
			return editAllowList(ctx, tx, ev.ShopID, func(list []string) []string {
				return slices.DeleteFunc(list, func(h string) bool { return h == ev.Host })
			})
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.PublicKeyRotated, _ *projections.DecodedEvent) error {
			_, err := tx.ExecContext(ctx, `UPDATE public_keys SET hash = ?, last4 = ?, rotated_at = ? WHERE key_id = ?`,
				ev.Hash, ev.Last4, readmodel.Micros(ev.RotatedAt), ev.KeyID)
			return err
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.PublicKeyRevoked, _ *projections.DecodedEvent) error {
			_, err := tx.ExecContext(ctx, `UPDATE public_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at = 0`,
				readmodel.Micros(ev.RevokedAt), ev.KeyID)
			return err
		}),
	}
}

// editAllowList rewrites a shop's allow-list with edit (a shop not in
// the read model, erased, changes nothing).
func editAllowList(ctx context.Context, tx *sql.Tx, shop string, edit func([]string) []string) error {
	var raw string
	err := tx.QueryRowContext(ctx, `SELECT cors_allow_list FROM shops WHERE shop_id = ?`, shop).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	var list []string
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return fmt.Errorf("shop %s cors list: %w", shop, err)
	}
	_, err = tx.ExecContext(ctx, `UPDATE shops SET cors_allow_list = ? WHERE shop_id = ?`, readmodel.JSONText(edit(list), "[]"), shop)
	return err
}

// AllowedOrigins returns a shop's CORS allow-list (hosts), in the order
// they were added.
func (q *Queries) AllowedOrigins(ctx context.Context, shop string) ([]string, error) {
	var raw string
	err := q.db.QueryRowContext(ctx, `SELECT cors_allow_list FROM shops WHERE shop_id = ?`, shop).Scan(&raw)
	if err := readmodel.FindError(err, "shop"); err != nil {
		return nil, err
	}
	list := []string{}
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		return nil, fmt.Errorf("shop %s cors list: %w", shop, err)
	}
	return list, nil
}

// PublicKeyInfo is a public key as its list shows it: never the key, nor
// its hash.
type PublicKeyInfo struct {
	ID, ShopID, Environment, Last4 string
	CreatedAt                      time.Time
	RotatedAt, RevokedAt           time.Time // zero when not
}

const publicKeyColumns = `key_id, shop_id, environment, last4, created_at, rotated_at, revoked_at`

func scanPublicKey(s readmodel.Scanner) (PublicKeyInfo, error) {
	var k PublicKeyInfo
	var created, rotated, revoked int64
	if err := s.Scan(&k.ID, &k.ShopID, &k.Environment, &k.Last4, &created, &rotated, &revoked); err != nil {
		return PublicKeyInfo{}, err
	}
	k.CreatedAt, k.RotatedAt, k.RevokedAt = readmodel.Time(created), readmodel.Time(rotated), readmodel.Time(revoked)
	return k, nil
}

// PublicKeys lists a shop's public keys, revoked ones too, oldest first.
func (q *Queries) PublicKeys(ctx context.Context, shop string) ([]PublicKeyInfo, error) {
	return readmodel.List(ctx, q.db, "public keys", scanPublicKey,
		`SELECT `+publicKeyColumns+` FROM public_keys WHERE shop_id = ? ORDER BY created_at, key_id`, shop)
}

// PublicKeyByID returns a public key of a shop (not found for another
// shop's).
func (q *Queries) PublicKeyByID(ctx context.Context, shop, id string) (PublicKeyInfo, error) {
	k, err := scanPublicKey(q.db.QueryRowContext(ctx, `SELECT `+publicKeyColumns+` FROM public_keys WHERE key_id = ? AND shop_id = ?`, id, shop))
	if err := readmodel.FindError(err, "public key"); err != nil {
		return PublicKeyInfo{}, err
	}
	return k, nil
}
