package main

import (
	"bytes"
	"context"
	"io"
	"mime/quotedprintable"
	"net/http"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/internal/smtptest"
)

// mailText returns the text of a mail the relay received, decoded.
func mailText(t *testing.T, m smtptest.Message) string {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		t.Fatal(err)
	}
	var r io.Reader = msg.Body
	if strings.EqualFold(msg.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		r = quotedprintable.NewReader(msg.Body)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var invitationLink = regexp.MustCompile(`http://[^\s]+/admin/invitations/[A-Za-z0-9_-]{43}`)

// TestAdminInvitations: an owner invites by e-mail through the users
// page; the mail carries a link that works once: the invited person
// chooses a password, becomes a user of the account with the role and is
// signed in; the link then is 404. Only owners invite; bad input is
// shown and records nothing; the invitation is the owner's in the audit
// history. Without a relay the link is shown once to the owner.
func TestAdminInvitations(t *testing.T) {
	relay, err := smtptest.Start(smtptest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Close() })
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) {
		c.TrustedProxies = []string{"127.0.0.1/32"}
		c.SMTPAddr, c.SMTPFrom = relay.Addr, "admin@cgp.example.com"
	})
	tn := newTenant(t, dir, "invite.example.com", "agency", "*")
	owner := signInAs(t, s, dir, tn.accountID, "owner@invite.example.com", "owner", "127.0.0.1")
	admin := signInAs(t, s, dir, tn.accountID, "admin@invite.example.com", "admin", "127.0.0.1")

	page := owner.get(t, "/admin/users")
	pageHas(t, "users page", page, "owner@invite.example.com", "admin@invite.example.com", `action="/admin/users/invitations"`)
	if r := admin.get(t, "/admin/users"); strings.Contains(string(r.body), `action="/admin/users/invitations"`) {
		t.Fatal("an admin sees the invitation form")
	}
	if r := admin.post(t, "/admin/users/invitations", url.Values{"email": {"x@invite.example.com"}, "role": {"owner"}}); r.status != 403 {
		t.Fatalf("an admin invites: %d", r.status)
	}
	for _, f := range []url.Values{{"email": {"not an address"}, "role": {"admin"}}, {"email": {"y@invite.example.com"}, "role": {"boss"}}} {
		if r := owner.post(t, "/admin/users/invitations", f); r.status != 422 {
			t.Fatalf("invite %v: %d %s", f, r.status, r.body)
		}
	}
	if relay.Count() != 0 {
		t.Fatalf("refused invitations sent %d mails", relay.Count())
	}

	sent := owner.post(t, "/admin/users/invitations", url.Values{"email": {"New.Person@Invite.example.com"}, "role": {"admin"}})
	if sent.status != 303 || !strings.HasPrefix(sent.header.Get("Location"), "/admin/users?notice=") {
		t.Fatalf("invite: %d %s", sent.status, sent.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := relay.WaitCount(ctx, 1); err != nil {
		t.Fatal(err)
	}
	m := relay.Messages()[0]
	if len(m.To) != 1 || m.To[0] != "new.person@invite.example.com" {
		t.Fatalf("mail to %v", m.To)
	}
	link := invitationLink.FindString(mailText(t, m))
	if link == "" {
		t.Fatalf("no link in %s", mailText(t, m))
	}
	pageHas(t, "pending", owner.get(t, "/admin/users"), "new.person@invite.example.com")

	path := strings.TrimPrefix(link, s.base)
	form := adminDo(t, http.MethodGet, s.base+path, "192.0.2.9", "", nil, nil)
	pageHas(t, "invitation page", form, "new.person@invite.example.com", `autocomplete="new-password"`, "admin")
	for _, f := range []url.Values{{"password": {"short"}, "password_confirm": {"short"}},
		{"password": {"a long enough password"}, "password_confirm": {"another long password"}}} {
		if r := adminDo(t, http.MethodPost, s.base+path, "192.0.2.9", "", f, nil); r.status != 422 || len(r.resp.Cookies()) != 0 {
			t.Fatalf("accept with %v: %d", f, r.status)
		}
	}
	ok := adminDo(t, http.MethodPost, s.base+path, "192.0.2.9", "", url.Values{"password": {"a long enough password"},
		"password_confirm": {"a long enough password"}}, nil)
	if ok.status != 303 || ok.header.Get("Location") != "/admin" {
		t.Fatalf("accept: %d %s", ok.status, ok.body)
	}
	joined := &adminUser{s: s, ip: "192.0.2.9", session: sessionCookie(t, ok).Value}
	pageHas(t, "the new user's shops", joined.get(t, "/admin"), tn.domain, "new.person@invite.example.com (admin)")
	if r := adminDo(t, http.MethodPost, s.base+"/admin/login", "192.0.2.10", "", login("new.person@invite.example.com", "a long enough password"), nil); r.status != 303 {
		t.Fatalf("the new user signs in: %d", r.status)
	}
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		var f url.Values
		if m == http.MethodPost {
			f = url.Values{"password": {"a long enough password"}, "password_confirm": {"a long enough password"}}
		}
		if r := adminDo(t, m, s.base+path, "192.0.2.9", "", f, nil); r.status != 404 {
			t.Fatalf("the used link, %s: %d", m, r.status)
		}
	}
	if r := adminDo(t, http.MethodGet, s.base+"/admin/invitations/"+strings.Repeat("A", 43), "192.0.2.9", "", nil, nil); r.status != 404 {
		t.Fatalf("an unknown link: %d", r.status)
	}
	users := cli(t, dir, "users", "list", "--account", tn.accountID)["users"].([]any)
	if len(users) != 3 {
		t.Fatalf("users: %v", users)
	}
	// The invitation is the owner's in the log (an account's event, in no
	// shop's history), the acceptance the invitation's.
	s.stop()
	core, err := OpenCore(context.Background(), testConfig(dir), newLogger(&Config{LogLevel: "error"}, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close()
	evs, err := core.Log.ReadAll(context.Background(), 0, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	actors := map[string]string{}
	for _, e := range evs {
		if e.Type == "UserInvited" || e.Type == "InvitationAccepted" {
			actors[e.Type] = e.Metadata.Actor
		}
	}
	if !strings.HasPrefix(actors["UserInvited"], "user:usr_") || !strings.HasPrefix(actors["InvitationAccepted"], "invitation:inv_") {
		t.Fatalf("actors %v", actors)
	}
}

// TestAdminInvitationWithoutRelay: without an SMTP relay the owner sees
// the invitation link once, and it works.
func TestAdminInvitationWithoutRelay(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	tn := newTenant(t, dir, "invite-norelay.example.com", "agency", "*")
	owner := signInAs(t, s, dir, tn.accountID, "owner@invite-norelay.example.com", "owner", "127.0.0.1")
	r := owner.post(t, "/admin/users/invitations", url.Values{"email": {"ro@invite-norelay.example.com"}, "role": {"read_only"}})
	link := secretOf(r)
	if r.status != 201 || !invitationLink.MatchString(link) {
		t.Fatalf("invite without relay: %d %s", r.status, r.body)
	}
	if strings.Contains(string(owner.get(t, "/admin/users").body), link) {
		t.Fatal("the link is shown again")
	}
	path := strings.TrimPrefix(link, s.base)
	ok := adminDo(t, http.MethodPost, s.base+path, "192.0.2.20", "", url.Values{"password": {"a long enough password"},
		"password_confirm": {"a long enough password"}}, nil)
	if ok.status != 303 {
		t.Fatalf("accept: %d %s", ok.status, ok.body)
	}
}
