package domain

import "time"

// PrefixInvitation prefixes the ids of invitations to an account.
const PrefixInvitation = "inv_"

// InvitationStream is the stream of an invitation.
func InvitationStream(id string) string { return "invitation-" + id }

// InvitationTTL is how long an invitation may be accepted.
const InvitationTTL = 7 * 24 * time.Hour

// UserInvited: a user of an account invited someone by e-mail to join it
// with a role. Only the SHA-256 of the invitation's secret link is kept
// (the link is mailed once). The e-mail is personal data, sealed under
// the invitation's own key.
type UserInvited struct {
	InvitationID string    `json:"invitation_id"`
	AccountID    string    `json:"account_id"`
	Role         Role      `json:"role"`
	TokenHash    string    `json:"token_hash"`
	InvitedBy    string    `json:"invited_by"` // the inviting user's id
	InvitedAt    time.Time `json:"invited_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	// Personal data.
	Email string `json:"email"`
}

var invitationPersonalFields = []string{"email"}

// EventType implements Event.
func (UserInvited) EventType() string { return "UserInvited" }

// Subject implements Personal: the invited person, by the invitation.
func (e UserInvited) Subject() string { return e.InvitationID }

// PersonalFields implements Personal.
func (UserInvited) PersonalFields() []string { return invitationPersonalFields }

// InvitationAccepted: the invited person set a password and became the
// user UserID. An invitation is accepted once.
type InvitationAccepted struct {
	InvitationID string    `json:"invitation_id"`
	UserID       string    `json:"user_id"`
	AcceptedAt   time.Time `json:"accepted_at"`
}

// EventType implements Event.
func (InvitationAccepted) EventType() string { return "InvitationAccepted" }

func invitationEvents() []EventSpec {
	return []EventSpec{
		{Name: "UserInvited", Version: 1, New: func() Event { return &UserInvited{} }},
		{Name: "InvitationAccepted", Version: 1, New: func() Event { return &InvitationAccepted{} }},
	}
}

// Invitation is the invitation aggregate.
type Invitation struct {
	ID, AccountID, Email, TokenHash string
	Role                            Role
	ExpiresAt                       time.Time
	Accepted, Exists                bool
}

// Apply folds an event into the invitation.
func (i *Invitation) Apply(e Event) {
	switch ev := e.(type) {
	case *UserInvited:
		i.ID, i.AccountID, i.Email, i.TokenHash, i.Role, i.ExpiresAt, i.Exists =
			ev.InvitationID, ev.AccountID, ev.Email, ev.TokenHash, ev.Role, ev.ExpiresAt, true
	case *InvitationAccepted:
		i.Accepted = true
	}
}

// InviteUser decides an invitation of email to account with role, by the
// user inviter (who must be an owner of that account).
func InviteUser(account *Account, inviter *User, id, email, role, tokenHash string, now time.Time) (*UserInvited, error) {
	if !account.Exists {
		return nil, NotFound("account")
	}
	if !inviter.Exists || inviter.AccountID != account.ID || inviter.Role != RoleOwner {
		return nil, Forbidden("only an owner of the account invites users")
	}
	email, r, err := parseUserEmailRole(email, role)
	if err != nil {
		return nil, err
	}
	if len(tokenHash) != 64 {
		return nil, Invalid("token", "the invitation's secret is missing")
	}
	now = now.UTC()
	return &UserInvited{InvitationID: id, AccountID: account.ID, Role: r, TokenHash: tokenHash, InvitedBy: inviter.ID,
		InvitedAt: now, ExpiresAt: now.Add(InvitationTTL), Email: email}, nil
}

// Accept decides the acceptance of the invitation by the new user userID.
func (i *Invitation) Accept(userID string, now time.Time) (*InvitationAccepted, error) {
	switch {
	case !i.Exists:
		return nil, NotFound("invitation")
	case i.Accepted:
		return nil, Conflict("this invitation was accepted already: sign in")
	case !now.Before(i.ExpiresAt):
		return nil, Conflict("this invitation expired: ask for a new one")
	}
	return &InvitationAccepted{InvitationID: i.ID, UserID: userID, AcceptedAt: now.UTC()}, nil
}
