package adminui

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

// The account's users and invitations by e-mail. Users are the admin
// interface's own (the API has tokens, not people): these pages run the
// commands InviteUser and AcceptInvitation directly, with the signed-in
// user as the actor.

// Mailer sends one plain-text e-mail (nil: no relay is configured).
type Mailer func(ctx context.Context, to, subject, text string) error

func (ui *UI) userRoutes(route func(path string, h http.Handler, method string)) {
	route("/admin/users", ui.signedIn(ui.usersPage), http.MethodGet)
	route("/admin/users/invitations", ui.signedIn(ui.invite), http.MethodPost)
	route("/admin/invitations/{token}", http.HandlerFunc(ui.invitationPage), http.MethodGet)
	route("/admin/invitations/{token}", http.HandlerFunc(ui.acceptInvitation), http.MethodPost)
}

func userMeta(r *http.Request, u *tenancy.User) commands.Meta {
	return commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: "user:" + u.ID, Source: "admin"}
}

func (ui *UI) usersPage(w http.ResponseWriter, r *http.Request, u *tenancy.User) {
	ui.showUsers(w, r, u, http.StatusOK, page{Notice: notice(r)})
}

func (ui *UI) showUsers(w http.ResponseWriter, r *http.Request, u *tenancy.User, status int, p page) {
	users, err := ui.cfg.Tenancy.AccountUsers(r.Context(), u.AccountID)
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	invs, err := ui.cfg.Tenancy.AccountInvitations(r.Context(), u.AccountID, time.Now())
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if p.Account, err = ui.cfg.Tenancy.AccountName(r.Context(), u.AccountID); err != nil {
		ui.fail(w, r, err)
		return
	}
	p.Title, p.User = "Users", u
	p.Data = map[string]any{"Users": users, "Invitations": invs, "Owner": u.Role == RoleOwner,
		"Roles": []string{RoleOwner, RoleAdmin, RoleReadOnly}}
	ui.render(w, r, status, "users", p)
}

// invite records an invitation and mails its link (an owner's only).
// Without a mail relay, or when the relay refuses, the link is shown once
// to the owner to pass on.
func (ui *UI) invite(w http.ResponseWriter, r *http.Request, u *tenancy.User) {
	if u.Role != RoleOwner {
		ui.render(w, r, http.StatusForbidden, "error", page{Title: "Not allowed", User: u,
			Error: "Only an owner of the account invites users."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		ui.showUsers(w, r, u, http.StatusBadRequest, page{Error: "The form could not be read; retry."})
		return
	}
	email, role := r.PostForm.Get("email"), r.PostForm.Get("role")
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		ui.fail(w, r, err)
		return
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	res, err := ui.cfg.Commands.InviteUser(r.Context(), commands.InviteUser{InviterID: u.ID, Email: email, Role: role,
		TokenHash: domain.HashToken(token)}, userMeta(r, u))
	if err != nil {
		if code := domain.ErrorCode(err); code == domain.CodeInvalid || code == domain.CodeForbidden {
			ui.showUsers(w, r, u, http.StatusUnprocessableEntity, page{Error: err.Error()})
			return
		}
		ui.fail(w, r, err)
		return
	}
	link := ui.baseURL(r) + "/admin/invitations/" + token
	email = domain.NormalizeEmail(email)
	if ui.cfg.Mail != nil {
		name, _ := ui.cfg.Tenancy.AccountName(r.Context(), u.AccountID)
		text := u.Email + " invites you to manage the shops of " + name + " (role " + role + ").\n\n" +
			"Open this link within 7 days to choose your password; it works once:\n\n" + link + "\n\n" +
			"If you did not expect this invitation, ignore this message.\n"
		err := ui.cfg.Mail(r.Context(), email, "Your invitation to "+name, text)
		ui.catchUp(r, uint64(res.Position))
		if err == nil {
			http.Redirect(w, r, "/admin/users?notice="+url.QueryEscape("Invitation "+res.ID+" sent to "+email+"."), http.StatusSeeOther)
			return
		}
		httpapi.Logger(r.Context()).Warn().Err(err).Str("invitation", res.ID).Msg("invitation e-mail not sent")
	} else {
		ui.catchUp(r, uint64(res.Position))
	}
	ui.showUsers(w, r, u, http.StatusCreated, page{Secret: &secret{Label: "The invitation link for " + email, Value: link,
		Note: "No e-mail could be sent: pass this link on yourself. It works once, for 7 days, and is shown only now."}})
}

// catchUp waits (bounded) until the users' read model shows the write
// at pos, so the next page shows it; running out only delays the display.
func (ui *UI) catchUp(r *http.Request, pos uint64) {
	if ui.cfg.CatchUpTo != nil {
		_ = ui.cfg.CatchUpTo(r.Context(), pos)
	}
}

// baseURL is the service's public address: the configured one, else the
// request's own.
func (ui *UI) baseURL(r *http.Request) string {
	if ui.cfg.BaseURL != "" {
		return strings.TrimRight(ui.cfg.BaseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// invitation finds the link's live invitation (404 for an unknown,
// accepted or expired one, alike).
func (ui *UI) invitation(r *http.Request) (*tenancy.Invitation, error) {
	token := mux.Vars(r)["token"]
	if len(token) != 43 {
		return nil, domain.NotFound("invitation")
	}
	inv, err := ui.cfg.Tenancy.InvitationByTokenHash(r.Context(), domain.HashToken(token))
	if err != nil {
		return nil, err
	}
	if !inv.AcceptedAt.IsZero() || !time.Now().Before(inv.ExpiresAt) {
		return nil, domain.NotFound("invitation")
	}
	return inv, nil
}

func (ui *UI) invitationPage(w http.ResponseWriter, r *http.Request) {
	inv, err := ui.invitation(r)
	if err != nil {
		ui.failInvitation(w, r, err)
		return
	}
	ui.render(w, r, http.StatusOK, "invitation", page{Title: "Join", Data: map[string]any{"Invitation": inv}})
}

func (ui *UI) failInvitation(w http.ResponseWriter, r *http.Request, err error) {
	if domain.ErrorCode(err) == domain.CodeNotFound {
		ui.render(w, r, http.StatusNotFound, "error", page{Title: "Invitation not valid",
			Error: "This invitation link is unknown, was used already or expired. Ask the account's owner for a new one."})
		return
	}
	ui.fail(w, r, err)
}

// acceptInvitation sets the invited person's password, creates their
// user and signs them in. Failed attempts count in the brute-force guard
// like failed sign-ins.
func (ui *UI) acceptInvitation(w http.ResponseWriter, r *http.Request) {
	v, err := ui.cfg.Guard.SignInCheck(r)
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	inv, err := ui.invitation(r)
	if err != nil {
		if domain.ErrorCode(err) == domain.CodeNotFound {
			if gerr := ui.cfg.Guard.SignInFailed(r, err); !errors.Is(gerr, err) {
				ui.fail(w, r, gerr)
				return
			}
		}
		ui.failInvitation(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		ui.render(w, r, http.StatusBadRequest, "invitation", page{Title: "Join", Error: "The form could not be read; retry.",
			Data: map[string]any{"Invitation": inv}})
		return
	}
	password := r.PostForm.Get("password")
	problem := ""
	if err := auth.CheckPassword(password); err != nil {
		problem = err.Error()
	} else if password != r.PostForm.Get("password_confirm") {
		problem = "The two passwords differ."
	}
	if problem != "" {
		ui.render(w, r, http.StatusUnprocessableEntity, "invitation", page{Title: "Join", Error: problem,
			Data: map[string]any{"Invitation": inv}})
		return
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	res, err := ui.cfg.Commands.AcceptInvitation(r.Context(), commands.AcceptInvitation{InvitationID: inv.ID, PasswordHash: hash},
		commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: "invitation:" + inv.ID, Source: "admin"})
	if code := domain.ErrorCode(err); code == domain.CodeConflict {
		ui.render(w, r, http.StatusConflict, "error", page{Title: "Invitation not valid", Error: err.Error()})
		return
	}
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if err := ui.cfg.Guard.SignInSucceeded(r, v); err != nil {
		ui.fail(w, r, err)
		return
	}
	if ui.cfg.CatchUpTo != nil {
		if err := ui.cfg.CatchUpTo(r.Context(), uint64(res.Position)); err != nil {
			ui.fail(w, r, err)
			return
		}
	}
	ui.startSession(w, r, res.ID)
}
