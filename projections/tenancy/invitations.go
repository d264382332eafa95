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

// invitationsSQL keeps the invitations to accounts (the admin interface's
// users page and the invitation link's page), found by the SHA-256 of the
// link's secret.
const invitationsSQL = `
CREATE TABLE invitations (
	invitation_id TEXT PRIMARY KEY,
	account_id    TEXT NOT NULL,
	email         TEXT NOT NULL,
	role          TEXT NOT NULL,
	token_hash    TEXT NOT NULL UNIQUE,
	invited_by    TEXT NOT NULL,
	invited_at    INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL,
	accepted_at   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX invitations_account ON invitations (account_id);
`

// invitationCases fold the invitations. One whose key was shredded
// decodes without e-mail: no row.
func invitationCases() []projections.TxCase {
	return []projections.TxCase{
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.UserInvited, _ *projections.DecodedEvent) error {
			if ev.Email == "" {
				return nil
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO invitations (invitation_id, account_id, email, role, token_hash, invited_by, invited_at, expires_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
				ev.InvitationID, ev.AccountID, ev.Email, string(ev.Role), ev.TokenHash, ev.InvitedBy, ev.InvitedAt.UnixMicro(), ev.ExpiresAt.UnixMicro())
			return err
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.InvitationAccepted, _ *projections.DecodedEvent) error {
			_, err := tx.ExecContext(ctx, `UPDATE invitations SET accepted_at = ? WHERE invitation_id = ?`, ev.AcceptedAt.UnixMicro(), ev.InvitationID)
			return err
		}),
	}
}

// Invitation is an invitation of the read model.
type Invitation struct {
	ID, AccountID, Email, InvitedBy string
	Role                            domain.Role
	InvitedAt, ExpiresAt            time.Time
	AcceptedAt                      time.Time // zero: not accepted
}

const invitationColumns = `invitation_id, account_id, email, role, invited_by, invited_at, expires_at, accepted_at`

func scanInvitation(s interface{ Scan(...any) error }) (Invitation, error) {
	var i Invitation
	var role string
	var invited, expires, accepted int64
	if err := s.Scan(&i.ID, &i.AccountID, &i.Email, &role, &i.InvitedBy, &invited, &expires, &accepted); err != nil {
		return i, err
	}
	i.Role, i.InvitedAt, i.ExpiresAt = domain.Role(role), time.UnixMicro(invited).UTC(), time.UnixMicro(expires).UTC()
	if accepted != 0 {
		i.AcceptedAt = time.UnixMicro(accepted).UTC()
	}
	return i, nil
}

// InvitationByTokenHash returns the invitation whose link's secret has
// the SHA-256 hash (hex).
func (q *Queries) InvitationByTokenHash(ctx context.Context, hash string) (*Invitation, error) {
	i, err := scanInvitation(q.db.QueryRowContext(ctx, `SELECT `+invitationColumns+` FROM invitations WHERE token_hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("invitation")
	}
	if err != nil {
		return nil, fmt.Errorf("find invitation: %w", err)
	}
	return &i, nil
}

// AccountInvitations lists an account's invitations not accepted yet and
// not expired at now, the newest first.
func (q *Queries) AccountInvitations(ctx context.Context, accountID string, now time.Time) ([]Invitation, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT `+invitationColumns+` FROM invitations
		WHERE account_id = ? AND accepted_at = 0 AND expires_at > ? ORDER BY invited_at DESC`, accountID, now.UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("account invitations: %w", err)
	}
	defer rows.Close()
	var out []Invitation
	for rows.Next() {
		i, err := scanInvitation(rows)
		if err != nil {
			return nil, fmt.Errorf("account invitations: %w", err)
		}
		out = append(out, i)
	}
	return out, rows.Err()
}

// AccountUsers lists an account's users by e-mail.
func (q *Queries) AccountUsers(ctx context.Context, accountID string) ([]User, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT `+userColumns+` FROM users WHERE account_id = ? ORDER BY email`, accountID)
	if err != nil {
		return nil, fmt.Errorf("account users: %w", err)
	}
	defer rows.Close()
	var out []User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, fmt.Errorf("account users: %w", err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}
