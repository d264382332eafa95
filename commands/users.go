package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// CreateUser creates a merchant user of an account. PasswordHash is the
// password's PHC string (auth.HashPassword): the password itself never
// reaches a command.
type CreateUser struct {
	AccountID    string
	Email        string
	Role         string
	PasswordHash string
}

// CreateUser runs the command. The e-mail is claimed first (a stream per
// normalised address appended with "no stream"), so two users never share
// one across the service.
func (h *Handler) CreateUser(ctx context.Context, cmd CreateUser, meta Meta) (Result, error) {
	var account domain.Account
	if _, _, err := h.load(ctx, domain.AccountStream(cmd.AccountID), &account); err != nil {
		return Result{}, err
	}
	id := domain.NewID(domain.PrefixUser)
	ev, err := domain.CreateUser(&account, id, cmd.Email, cmd.Role, cmd.PasswordHash, h.now())
	if err != nil {
		return Result{}, err
	}
	claim, err := h.codec.Encode(ctx, uuid.New(), "", &domain.UserEmailClaimed{UserID: id}, h.now(), meta.metadata())
	if err != nil {
		return Result{}, err
	}
	if _, err := h.log.Append(ctx, domain.UserEmailStream(ev.Email), eventlog.NoStream(), claim); err != nil {
		if errors.Is(err, eventlog.ErrWrongExpectedRevision) {
			return Result{}, domain.Conflict("a user with this e-mail already exists")
		}
		return Result{}, fmt.Errorf("claim e-mail: %w", err)
	}
	res, err := execute(ctx, h, "", domain.UserStream(id), func() *domain.User { return &domain.User{} },
		func(*domain.User) (decision, error) { return decision{events: []domain.Event{ev}}, nil }, meta)
	res.ID = id
	return res, err
}
