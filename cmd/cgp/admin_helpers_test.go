package main

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// adminUser is a merchant user signed in to the admin interface of a
// test server (behindProxy: the server trusts the test's
// X-Forwarded-For).
type adminUser struct {
	s       *testServer
	ip      string
	session string
	email   string
}

// signInAs creates a user of account with role (cgp users create) and
// signs it in from ip.
func signInAs(t *testing.T, s *testServer, dir, account, email, role, ip string) *adminUser {
	t.Helper()
	const password = "correct horse battery staple"
	if code, _, errOut := cliStdin(t, dir, password+"\n", "users", "create", "--account", account, "--email", email,
		"--role", role, "--password-stdin"); code != 0 {
		t.Fatalf("users create %s: exit %d: %s", email, code, errOut)
	}
	r := adminDo(t, http.MethodPost, s.base+"/admin/login", ip, "", login(email, password), nil)
	if r.status != 303 {
		t.Fatalf("sign-in %s: %d %s", email, r.status, r.body)
	}
	return &adminUser{s: s, ip: ip, session: sessionCookie(t, r).Value, email: email}
}

// get fetches an admin page (validated against the OpenAPI document).
func (u *adminUser) get(t *testing.T, path string) response {
	t.Helper()
	return adminDo(t, http.MethodGet, u.s.base+path, u.ip, u.session, nil, nil)
}

// post posts a form to an admin page, from the same origin, with a
// fresh form key unless form has one.
func (u *adminUser) post(t *testing.T, path string, form url.Values) response {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	return adminDo(t, http.MethodPost, u.s.base+path, u.ip, u.session, form, map[string]string{"Origin": u.s.base, "Sec-Fetch-Site": "same-origin"})
}

var shownSecret = regexp.MustCompile(`id="secret-value" readonly value="([^"]+)"`)

// secretOf returns the shown-once secret of a page ("" when none).
func secretOf(r response) string {
	m := shownSecret.FindStringSubmatch(string(r.body))
	if m == nil {
		return ""
	}
	return m[1]
}

// pageHas fails unless the page's body holds every string.
func pageHas(t *testing.T, what string, r response, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(string(r.body), w) {
			t.Fatalf("%s: %d, no %q in\n%s", what, r.status, w, r.body)
		}
	}
}
