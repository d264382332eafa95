package tenancy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
)

// usersSQL keeps the admin interface's merchant users (issue 22, point
// 1): one row per user, found by the normalised e-mail (unique across the
// service, as the e-mail claim stream makes it), with the password's PHC
// string.
const usersSQL = `
CREATE TABLE users (
	user_id       TEXT PRIMARY KEY,
	account_id    TEXT NOT NULL,
	email         TEXT NOT NULL UNIQUE,
	role          TEXT NOT NULL,
	password_hash TEXT NOT NULL,
	created_at    INTEGER NOT NULL
);
CREATE INDEX users_account ON users (account_id);
`

// userCases fold the users' events. A user whose key was shredded decodes
// without e-mail and hash: no row (nobody can sign in as them).
func userCases() []projections.TxCase {
	return []projections.TxCase{
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.UserCreated, _ *projections.DecodedEvent) error {
			if ev.Email == "" || ev.PasswordHash == "" {
				return nil
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO users (user_id, account_id, email, role, password_hash, created_at)
				VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
				ev.UserID, ev.AccountID, domain.NormalizeEmail(ev.Email), string(ev.Role), ev.PasswordHash, ev.CreatedAt.UnixMicro())
			return err
		}),
	}
}

// User is a merchant user of the read model.
type User struct {
	ID           string      `json:"id"`
	AccountID    string      `json:"account_id"`
	Email        string      `json:"email"`
	Role         domain.Role `json:"role"`
	PasswordHash string      `json:"-"`
	CreatedAt    time.Time   `json:"created_at"`
}

// UserByEmail returns the user of a (normalised here) e-mail address.
func (q *Queries) UserByEmail(ctx context.Context, email string) (*User, error) {
	return q.user(ctx, `email = ?`, domain.NormalizeEmail(email))
}

// UserByID returns a user.
func (q *Queries) UserByID(ctx context.Context, id string) (*User, error) {
	return q.user(ctx, `user_id = ?`, id)
}

func (q *Queries) user(ctx context.Context, cond string, arg any) (*User, error) {
	u, err := scanUser(q.db.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE `+cond, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("user")
	}
	if err != nil {
		return nil, fmt.Errorf("find user: %w", err)
	}
	return &u, nil
}

const userColumns = `user_id, account_id, email, role, password_hash, created_at`

func scanUser(s interface{ Scan(...any) error }) (User, error) {
	var u User
	var role string
	var created int64
	err := s.Scan(&u.ID, &u.AccountID, &u.Email, &role, &u.PasswordHash, &created)
	u.Role, u.CreatedAt = domain.Role(role), time.UnixMicro(created).UTC()
	return u, err
}

// AccountName returns an account's name.
func (q *Queries) AccountName(ctx context.Context, accountID string) (string, error) {
	var name string
	err := q.db.QueryRowContext(ctx, `SELECT name FROM accounts WHERE account_id = ?`, accountID).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", domain.NotFound("account")
	}
	if err != nil {
		return "", fmt.Errorf("find account: %w", err)
	}
	return name, nil
}

// AccountShop is one shop of an account, as the admin interface lists it.
type AccountShop struct {
	ID        string
	Domain    string
	Plan      domain.Plan
	Installed bool
}

// AccountShops lists an account's shops (erased ones left out), by
// domain.
func (q *Queries) AccountShops(ctx context.Context, accountID string) ([]AccountShop, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT shop_id, domain, plan, uninstalled_at FROM shops
		WHERE account_id = ? AND shop_id NOT IN (SELECT shop_id FROM erased_shops) ORDER BY domain, shop_id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("account shops: %w", err)
	}
	defer rows.Close()
	var out []AccountShop
	for rows.Next() {
		var s AccountShop
		var plan string
		var uninstalled int64
		if err := rows.Scan(&s.ID, &s.Domain, &plan, &uninstalled); err != nil {
			return nil, fmt.Errorf("account shops: %w", err)
		}
		s.Plan, s.Installed = domain.Plan(plan), uninstalled == 0
		out = append(out, s)
	}
	return out, rows.Err()
}
