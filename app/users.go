package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// CreatedUser is what `cgp users create` prints: never the password nor
// its hash.
type CreatedUser struct {
	ID        string      `json:"id"`
	AccountID string      `json:"account_id"`
	Email     string      `json:"email"`
	Role      domain.Role `json:"role"`
	Position  uint64      `json:"position"`
}

// CreateUser hashes password (auth.HashPassword: 12 to 1024 bytes) and
// creates a merchant user of account.
func CreateUser(ctx context.Context, c *Core, account, email, role, password string, meta commands.Meta) (CreatedUser, error) {
	if err := auth.CheckPassword(password); err != nil {
		return CreatedUser{}, domain.Invalid("password", "%s", err.Error())
	}
	if _, err := domain.ParseRole(role); err != nil {
		return CreatedUser{}, err
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return CreatedUser{}, err
	}
	res, err := c.Commands.CreateUser(ctx, commands.CreateUser{AccountID: account, Email: email, Role: role, PasswordHash: hash}, meta)
	if err != nil {
		return CreatedUser{}, err
	}
	return CreatedUser{ID: res.ID, AccountID: account, Email: domain.NormalizeEmail(email), Role: domain.Role(role),
		Position: uint64(res.Position)}, nil
}

// UserListing is one user of `cgp users list`.
type UserListing struct {
	ID        string      `json:"id"`
	AccountID string      `json:"account_id"`
	Email     string      `json:"email"`
	Role      domain.Role `json:"role"`
	CreatedAt time.Time   `json:"created_at"`
}

// ListUsers folds the users from the log (of one account when account is
// not empty), in creation order, so it works whether or not a server runs.
func ListUsers(ctx context.Context, c *Core, account string) ([]UserListing, error) {
	out := []UserListing{}
	var after eventlog.Position
	for {
		evs, err := c.Log.ReadAll(ctx, after, 1000)
		if err != nil {
			return nil, fmt.Errorf("read log: %w", err)
		}
		for i := range evs {
			e := &evs[i]
			after = e.Position
			if e.Type != "UserCreated" || !strings.HasPrefix(e.StreamID, "user-") {
				continue
			}
			d, err := c.Codec.Decode(ctx, e)
			if err != nil {
				return nil, err
			}
			ev, ok := d.Event.(*domain.UserCreated)
			if !ok || (account != "" && ev.AccountID != account) {
				continue
			}
			out = append(out, UserListing{ID: ev.UserID, AccountID: ev.AccountID, Email: ev.Email, Role: ev.Role, CreatedAt: ev.CreatedAt})
		}
		if len(evs) < 1000 {
			break
		}
	}
	return out, nil
}
