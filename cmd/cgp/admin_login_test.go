package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// cliStdin runs a cgp command with stdin and returns its exit code,
// stdout and stderr.
func cliStdin(t *testing.T, dir, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	args = append(args, "--data-dir", dir)
	if f, ok := dirFlags.Load(dir); ok {
		args = append(args, f.([]string)...)
	}
	code := RunStdin(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// adminDo sends one request to the admin interface without following
// redirects, from the client address ip (the server trusts the test's
// X-Forwarded-For), with the cookie session when not empty.
func adminDo(t *testing.T, method, u, ip, session string, form url.Values, headers map[string]string) response {
	t.Helper()
	r := adminSend(t, method, u, ip, session, form, headers)
	adminValidator(t).ValidateResponse(t, r.req, r.resp, r.body)
	return r
}

var adminValidators sync.Map // *testing.T → *openapitest.Validator

func adminValidator(t *testing.T) *openapitest.Validator {
	if v, ok := adminValidators.Load(t); ok {
		return v.(*openapitest.Validator)
	}
	v := openapitest.NewValidator(t)
	adminValidators.Store(t, v)
	t.Cleanup(func() { adminValidators.Delete(t) })
	return v
}

func adminSend(t *testing.T, method, u, ip, session string, form url.Values, headers map[string]string) response {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("X-Forwarded-For", ip)
	if session != "" {
		req.AddCookie(&http.Cookie{Name: "cgp_session", Value: session})
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b, req: req, resp: resp}
}

func sessionCookie(t *testing.T, r response) *http.Cookie {
	t.Helper()
	for _, c := range r.resp.Cookies() {
		if c.Name == "cgp_session" {
			return c
		}
	}
	t.Fatalf("no cgp_session cookie in %v", r.header.Values("Set-Cookie"))
	return nil
}

func checkAdminHeaders(t *testing.T, what string, r response) {
	t.Helper()
	h := r.header
	csp := h.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
		strings.Contains(csp, "unsafe-inline") {
		t.Errorf("%s: Content-Security-Policy %q", what, csp)
	}
	if h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "same-origin" {
		t.Errorf("%s: headers %v", what, h)
	}
}

func login(email, password string) url.Values {
	return url.Values{"email": {email}, "password": {password}}
}

// TestAdminSignIn: issue 22 point 1 over real HTTP: a user made with `cgp
// users create`, the sign-in page and its answers, the session cookie and
// its rotation, the account's shops (another account's shop is 404),
// sign-out, the cross-origin refusal and the stored session hashes.
func TestAdminSignIn(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	a := newTenant(t, dir, "admin-a.example.com", "agency", "*")
	b := newTenant(t, dir, "admin-b.example.com", "agency", "*")
	const password = "correct horse battery staple"

	code, out, errOut := cliStdin(t, dir, password+"\n", "users", "create", "--account", a.accountID, "--email", "Ana@Admin-A.example.com",
		"--role", "owner", "--password-stdin")
	if code != 0 {
		t.Fatalf("users create: exit %d: %s", code, errOut)
	}
	var user map[string]any
	if err := json.Unmarshal([]byte(out), &user); err != nil {
		t.Fatalf("users create output %q: %v", out, err)
	}
	if user["email"] != "ana@admin-a.example.com" || user["role"] != "owner" || user["account_id"] != a.accountID ||
		strings.Contains(out, password) || strings.Contains(out, "argon2") {
		t.Fatalf("users create printed %s", out)
	}
	if code, _, _ := cliStdin(t, dir, "short\n", "users", "create", "--account", a.accountID, "--email", "bo@admin-a.example.com",
		"--role", "admin", "--password-stdin"); code != exitUsage {
		t.Fatalf("a short password: exit %d, want %d", code, exitUsage)
	}
	if code, _, _ := cliStdin(t, dir, password+"\n", "users", "create", "--account", b.accountID, "--email", "ANA@admin-a.example.com",
		"--role", "read_only", "--password-stdin"); code == 0 {
		t.Fatal("a second user with the same e-mail was created")
	}
	if code, _, _ := cliStdin(t, dir, password+"\n", "users", "create", "--account", "acc_doesnotexist", "--email", "cy@admin-a.example.com",
		"--role", "admin", "--password-stdin"); code != exitFailure {
		t.Fatalf("an unknown account: exit %d, want %d", code, exitFailure)
	}
	if code, _, _ := cliStdin(t, dir, password+"\n", "users", "create", "--account", a.accountID, "--email", "cy@admin-a.example.com",
		"--role", "admin"); code != exitUsage {
		t.Fatalf("without --password-stdin: exit %d, want %d", code, exitUsage)
	}
	listed := cli(t, dir, "users", "list", "--account", a.accountID)["users"].([]any)
	if len(listed) != 1 || strings.Contains(toJSON(t, listed), "argon2") {
		t.Fatalf("users list: %v", listed)
	}

	page := adminDo(t, http.MethodGet, s.base+"/admin/login", "198.51.100.1", "", nil, nil)
	if page.status != 200 || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(page.body), `name="email"`) || !strings.Contains(string(page.body), `name="password"`) ||
		!strings.Contains(string(page.body), `autocomplete="current-password"`) || !strings.Contains(string(page.body), `<label for="email">`) {
		t.Fatalf("login page: %d %s", page.status, page.body)
	}
	checkAdminHeaders(t, "login page", page)
	if r := adminDo(t, http.MethodGet, s.base+"/admin", "198.51.100.1", "", nil, nil); r.status != 303 || r.header.Get("Location") != "/admin/login" {
		t.Fatalf("/admin signed out: %d %v", r.status, r.header)
	}

	// A wrong password and an unknown e-mail: one answer.
	wrong := adminDo(t, http.MethodPost, s.base+"/admin/login", "198.51.100.2", "", login("ana@admin-a.example.com", "wrong password here"), nil)
	unknown := adminDo(t, http.MethodPost, s.base+"/admin/login", "198.51.100.2", "", login("nobody@admin-a.example.com", "wrong password here"), nil)
	if wrong.status != 401 || unknown.status != 401 || !bytes.Equal(wrong.body, unknown.body) {
		t.Fatalf("wrong password %d, unknown e-mail %d; bodies equal: %v", wrong.status, unknown.status, bytes.Equal(wrong.body, unknown.body))
	}
	checkAdminHeaders(t, "failed sign-in", wrong)
	if len(wrong.resp.Cookies()) != 0 {
		t.Fatalf("a failed sign-in set %v", wrong.header.Values("Set-Cookie"))
	}

	// Cross-origin posts are refused before anything is checked.
	for _, h := range []map[string]string{{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
		r := adminDo(t, http.MethodPost, s.base+"/admin/login", "198.51.100.3", "", login("ana@admin-a.example.com", password), h)
		if r.status != 403 || len(r.resp.Cookies()) != 0 {
			t.Fatalf("cross-origin sign-in %v: %d %v", h, r.status, r.header)
		}
		checkAdminHeaders(t, "cross-origin refusal", r)
	}

	// A successful sign-in with a planted session id: a new id.
	const planted = "planted-session-id-0123456789abcdefghijklmnopq"
	ok := adminDo(t, http.MethodPost, s.base+"/admin/login", "198.51.100.4", planted, login(" ANA@admin-a.example.com", password),
		map[string]string{"Origin": s.base, "Sec-Fetch-Site": "same-origin"})
	if ok.status != 303 || ok.header.Get("Location") != "/admin" {
		t.Fatalf("sign-in: %d %s", ok.status, ok.body)
	}
	c := sessionCookie(t, ok)
	if c.Value == planted || len(c.Value) != 43 || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/admin" || c.Secure || c.MaxAge <= 0 {
		t.Fatalf("session cookie %+v", c)
	}
	first := c.Value
	if r := adminDo(t, http.MethodGet, s.base+"/admin", "198.51.100.4", planted, nil, nil); r.status != 303 {
		t.Fatalf("the planted id signs in: %d", r.status)
	}

	home := adminDo(t, http.MethodGet, s.base+"/admin", "198.51.100.4", first, nil, nil)
	if home.status != 200 || !strings.Contains(string(home.body), a.domain) || strings.Contains(string(home.body), b.domain) ||
		!strings.Contains(string(home.body), "ana@admin-a.example.com") || !strings.Contains(string(home.body), "owner") {
		t.Fatalf("/admin: %d %s", home.status, home.body)
	}
	checkAdminHeaders(t, "/admin", home)
	shop := adminDo(t, http.MethodGet, s.base+"/admin/shops/"+a.shopID, "198.51.100.4", first, nil, nil)
	if shop.status != 200 || !strings.Contains(string(shop.body), a.domain) || !strings.Contains(string(shop.body), "agency") {
		t.Fatalf("own shop: %d %s", shop.status, shop.body)
	}
	for _, id := range []string{b.shopID, "shop_doesnotexist"} {
		if r := adminDo(t, http.MethodGet, s.base+"/admin/shops/"+id, "198.51.100.4", first, nil, nil); r.status != 404 ||
			strings.Contains(string(r.body), b.domain) {
			t.Fatalf("shop %s of another account: %d %s", id, r.status, r.body)
		}
	}

	// Signing in again with the first session: a new id, the first ends.
	again := adminDo(t, http.MethodPost, s.base+"/admin/login", "198.51.100.4", first, login("ana@admin-a.example.com", password), nil)
	second := sessionCookie(t, again).Value
	if again.status != 303 || second == first {
		t.Fatalf("second sign-in: %d, same id %v", again.status, second == first)
	}
	if r := adminDo(t, http.MethodGet, s.base+"/admin", "198.51.100.4", first, nil, nil); r.status != 303 {
		t.Fatalf("the rotated-out session still works: %d", r.status)
	}

	// Only hashes in sessions.db, a private file.
	path := filepath.Join(dir, "sessions.db")
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("sessions.db: %v %v", info, err)
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored string
	if err := db.QueryRow(`SELECT group_concat(id_hash || ' ' || user_id, ',') FROM sessions`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(second))
	if strings.Contains(stored, second) || strings.Contains(stored, first) || !strings.Contains(stored, hex.EncodeToString(sum[:])) {
		t.Fatalf("sessions.db holds %q", stored)
	}

	// Sign-out ends the session.
	out2 := adminDo(t, http.MethodPost, s.base+"/admin/logout", "198.51.100.4", second, url.Values{}, nil)
	if out2.status != 303 || out2.header.Get("Location") != "/admin/login" || sessionCookie(t, out2).MaxAge >= 0 {
		t.Fatalf("logout: %d %v", out2.status, out2.header)
	}
	if r := adminDo(t, http.MethodGet, s.base+"/admin", "198.51.100.4", second, nil, nil); r.status != 303 || r.header.Get("Location") != "/admin/login" {
		t.Fatalf("after logout: %d", r.status)
	}
}

// TestAdminSignInSharesTheBruteForceGuard: failed sign-ins count in the
// API's guard: ten failures from one address are answered 401, the
// eleventh 429, and then even the right password is refused.
func TestAdminSignInSharesTheBruteForceGuard(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	a := newTenant(t, dir, "admin-guard.example.com", "agency", "*")
	const password = "correct horse battery staple"
	if code, _, errOut := cliStdin(t, dir, password, "users", "create", "--account", a.accountID, "--email", "guard@admin-guard.example.com",
		"--role", "read_only", "--password-stdin"); code != 0 {
		t.Fatalf("users create: %s", errOut)
	}
	const ip = "203.0.113.77"
	for i := 1; i <= 11; i++ {
		r := adminDo(t, http.MethodPost, s.base+"/admin/login", ip, "", login("guard@admin-guard.example.com", "not the password"), nil)
		want := 401
		if i == 11 {
			want = 429
		}
		if r.status != want {
			t.Fatalf("failure %d: %d, want %d", i, r.status, want)
		}
	}
	r := adminDo(t, http.MethodPost, s.base+"/admin/login", ip, "", login("guard@admin-guard.example.com", password), nil)
	if r.status != 429 || r.header.Get("Retry-After") == "" || len(r.resp.Cookies()) != 0 {
		t.Fatalf("the right password from a blocked address: %d %v", r.status, r.header)
	}
	// Another address signs in.
	if r := adminDo(t, http.MethodPost, s.base+"/admin/login", "203.0.113.78", "", login("guard@admin-guard.example.com", password), nil); r.status != 303 {
		t.Fatalf("another address: %d %s", r.status, r.body)
	}
}

// TestDemoCreatesAnAdminUser: `--demo` prints the demo user's password
// once, and it signs in to the admin interface, which lists the demo shop.
func TestDemoCreatesAnAdminUser(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) { c.Demo = true })
	out := s.stdout.String()
	m := regexp.MustCompile(`admin sign-in:\s+http://\S+/admin/login as (\S+), password (\S+)`).FindStringSubmatch(out)
	if m == nil || m[1] != "owner@demo-shop.example.com" || len(m[2]) != 20 {
		t.Fatalf("demo output: %q", out)
	}
	r := adminDo(t, http.MethodPost, s.base+"/admin/login", "127.0.0.1", "", login(m[1], m[2]), nil)
	if r.status != 303 {
		t.Fatalf("demo sign-in: %d %s", r.status, r.body)
	}
	home := adminDo(t, http.MethodGet, s.base+"/admin", "127.0.0.1", sessionCookie(t, r).Value, nil, nil)
	if home.status != 200 || !strings.Contains(string(home.body), "demo-shop.example.com") || !strings.Contains(string(home.body), "Demo Agency") {
		t.Fatalf("demo /admin: %d %s", home.status, home.body)
	}
}
