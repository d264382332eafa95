package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"net/mail"
	"strings"
	"time"
)

// PrefixUser prefixes the ids of merchant users (the admin interface's
// people, who belong to an account).
const PrefixUser = "usr_"

// UserStream is the stream of a merchant user.
func UserStream(id string) string { return "user-" + id }

// UserEmailStream is the stream that claims a user's e-mail address, so
// two users never share one (across the whole service: the admin
// interface signs in by e-mail alone, before any account is known). Its
// id is a domain-separated hash of the normalised address: the stream
// name carries no address in clear.
func UserEmailStream(email string) string {
	sum := sha256.Sum256([]byte("cgp user email v1\x00" + NormalizeEmail(email)))
	return "useremail-" + hex.EncodeToString(sum[:16])
}

// NormalizeEmail is the form a user's e-mail is compared and stored in:
// trimmed and lower-case.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// Role is a merchant user's role in their account.
type Role string

// The roles. Owner and admin may change the account's shops; read-only
// users may only look (enforced by the admin interface's pages).
const (
	RoleOwner    Role = "owner"
	RoleAdmin    Role = "admin"
	RoleReadOnly Role = "read_only"
)

// ParseRole parses a role name.
func ParseRole(s string) (Role, error) {
	switch r := Role(strings.TrimSpace(s)); r {
	case RoleOwner, RoleAdmin, RoleReadOnly:
		return r, nil
	}
	return "", Invalid("role", "role must be owner, admin or read_only")
}

// UserCreated: a merchant user of an account. The e-mail and the
// password hash are personal data, sealed under the user's own key (the
// user is the data subject).
type UserCreated struct {
	UserID    string `json:"user_id"`
	AccountID string `json:"account_id"`
	Role      Role   `json:"role"`
	// Personal data.
	Email        string    `json:"email"`
	PasswordHash string    `json:"password_hash"` // PHC string (auth.HashPassword)
	CreatedAt    time.Time `json:"created_at"`
}

var userPersonalFields = []string{"email", "password_hash"}

// EventType implements Event.
func (UserCreated) EventType() string { return "UserCreated" }

// Subject implements Personal: the user.
func (e UserCreated) Subject() string { return e.UserID }

// PersonalFields implements Personal.
func (UserCreated) PersonalFields() []string { return userPersonalFields }

// UserEmailClaimed reserves an e-mail address for a user (the claim
// stream's only event; it carries no address).
type UserEmailClaimed struct {
	UserID string `json:"user_id"`
}

// EventType implements Event.
func (UserEmailClaimed) EventType() string { return "UserEmailClaimed" }

// userEvents lists the merchant users' events.
func userEvents() []EventSpec {
	return []EventSpec{
		{Name: "UserCreated", Version: 1, New: func() Event { return &UserCreated{} }},
		{Name: "UserEmailClaimed", Version: 1, New: func() Event { return &UserEmailClaimed{} }},
	}
}

// User is the merchant user aggregate.
type User struct {
	ID        string
	AccountID string
	Role      Role
	Exists    bool
}

// Apply folds an event into the user.
func (u *User) Apply(e Event) {
	if ev, ok := e.(*UserCreated); ok {
		u.ID, u.AccountID, u.Role, u.Exists = ev.UserID, ev.AccountID, ev.Role, true
	}
}

// MaxEmailLength bounds a user's e-mail address (RFC 5321's path limit).
const MaxEmailLength = 254

// CreateUser decides the creation of a user of account. passwordHash is
// the already hashed password (the domain never sees the password).
func CreateUser(account *Account, id, email, role, passwordHash string, now time.Time) (*UserCreated, error) {
	if !account.Exists {
		return nil, NotFound("account")
	}
	email, r, err := parseUserEmailRole(email, role)
	if err != nil {
		return nil, err
	}
	if passwordHash == "" {
		return nil, Invalid("password", "password is required")
	}
	return &UserCreated{UserID: id, AccountID: account.ID, Role: r, Email: email, PasswordHash: passwordHash, CreatedAt: now.UTC()}, nil
}

// parseUserEmailRole normalises and checks a user's e-mail address and
// role (users and invitations).
func parseUserEmailRole(email, role string) (string, Role, error) {
	email = NormalizeEmail(email)
	if email == "" || len(email) > MaxEmailLength {
		return "", "", Invalid("email", "email must be 1 to %d characters", MaxEmailLength)
	}
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || a.Name != "" {
		return "", "", Invalid("email", "not a valid e-mail address, such as ana@example.com")
	}
	r, err := ParseRole(role)
	return email, r, err
}
