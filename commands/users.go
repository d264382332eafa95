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
	return h.createUser(ctx, domain.NewID(domain.PrefixUser), cmd, meta)
}

func (h *Handler) createUser(ctx context.Context, id string, cmd CreateUser, meta Meta) (Result, error) {
	var account domain.Account
	if _, _, err := h.load(ctx, domain.AccountStream(cmd.AccountID), &account); err != nil {
		return Result{}, err
	}
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

// InviteUser records an invitation to the inviter's account. TokenHash
// is the SHA-256 (hex) of the invitation link's secret, which the caller
// mails once.
type InviteUser struct {
	InviterID string
	Email     string
	Role      string
	TokenHash string
}

// InviteUser runs the command; the result's ID is the invitation's.
func (h *Handler) InviteUser(ctx context.Context, cmd InviteUser, meta Meta) (Result, error) {
	var inviter domain.User
	if _, _, err := h.load(ctx, domain.UserStream(cmd.InviterID), &inviter); err != nil {
		return Result{}, err
	}
	var account domain.Account
	if _, _, err := h.load(ctx, domain.AccountStream(inviter.AccountID), &account); err != nil {
		return Result{}, err
	}
	id := domain.NewID(domain.PrefixInvitation)
	ev, err := domain.InviteUser(&account, &inviter, id, cmd.Email, cmd.Role, cmd.TokenHash, h.now())
	if err != nil {
		return Result{}, err
	}
	res, err := execute(ctx, h, "", domain.InvitationStream(id), func() *domain.Invitation { return &domain.Invitation{} },
		func(*domain.Invitation) (decision, error) { return decision{events: []domain.Event{ev}}, nil }, meta)
	res.ID = id
	return res, err
}

// AcceptInvitation turns an invitation into a user with the password
// whose PHC string is PasswordHash. The acceptance is appended first,
// with the invitation's expected revision (an invitation makes one user
// even when accepted twice at once); the user is then created as
// CreateUser creates one (an e-mail already a user's is a conflict).
type AcceptInvitation struct {
	InvitationID string
	PasswordHash string
}

// AcceptInvitation runs the command; the result's ID is the new user's.
func (h *Handler) AcceptInvitation(ctx context.Context, cmd AcceptInvitation, meta Meta) (Result, error) {
	if !domain.HasPrefixID(cmd.InvitationID, domain.PrefixInvitation) {
		return Result{}, domain.NotFound("invitation")
	}
	var inv domain.Invitation
	userID := domain.NewID(domain.PrefixUser)
	if _, err := execute(ctx, h, "", domain.InvitationStream(cmd.InvitationID), func() *domain.Invitation { return &inv },
		func(i *domain.Invitation) (decision, error) {
			ev, err := i.Accept(userID, h.now())
			if err != nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}}, nil
		}, meta); err != nil {
		return Result{}, err
	}
	return h.createUser(ctx, userID, CreateUser{AccountID: inv.AccountID, Email: inv.Email, Role: string(inv.Role), PasswordHash: cmd.PasswordHash}, meta)
}
