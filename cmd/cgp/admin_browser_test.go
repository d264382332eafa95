package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestAdminInBrowser: issue 22's browser tests, in a real headless
// Chromium: sign in; create a token with two scopes, read it once from
// the page, call the API with it, reload and see its last-used time and
// 127.0.0.1; rotate and revoke; a form posted from another site is
// refused; a read-only user cannot create a token; another account's
// shop is 404. Screenshots of the pages go to test-artifacts/screenshots.
func TestAdminInBrowser(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "browser-a.example.com", "agency", "*")
	other := newTenant(t, dir, "browser-b.example.com", "agency", "*")
	const password = "correct horse battery staple"
	for _, u := range []struct{ email, role string }{{"owner@browser-a.example.com", "owner"}, {"reader@browser-a.example.com", "read_only"}} {
		if code, _, errOut := cliStdin(t, dir, password+"\n", "users", "create", "--account", tn.accountID, "--email", u.email,
			"--role", u.role, "--password-stdin"); code != 0 {
			t.Fatalf("users create: %s", errOut)
		}
	}
	ctx := newBrowser(t)
	base := s.base + "/admin/shops/" + tn.shopID

	signIn := func(email string) {
		t.Helper()
		inBrowser(t, ctx, "sign in as "+email,
			chromedp.Navigate(s.base+"/admin/login"),
			chromedp.WaitVisible(chromedp.CSS("#email")),
			chromedp.SendKeys(chromedp.CSS("#email"), email),
			chromedp.SendKeys(chromedp.CSS("#password"), password),
			chromedp.Click(chromedp.CSS("form[action='/admin/login'] button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS("ul.shops")))
	}
	signIn("owner@browser-a.example.com")
	if got := textOf(t, ctx, "ul.shops"); !strings.Contains(got, tn.domain) || strings.Contains(got, other.domain) {
		t.Fatalf("the shops of the account: %q", got)
	}
	screenshot(t, ctx, "01-shops")

	// Create a token with two scopes; it is shown once, focused.
	inBrowser(t, ctx, "create a token",
		chromedp.Navigate(base+"/tokens"),
		chromedp.WaitVisible(chromedp.CSS("#token-name")),
		chromedp.SendKeys(chromedp.CSS("#token-name"), "Browser sync"),
		chromedp.Click(chromedp.CSS("input[name=scopes][value='customers:read']")),
		chromedp.Click(chromedp.CSS("input[name=scopes][value='orders:read']")),
		chromedp.Click(chromedp.CSS("form[action$='/tokens'] button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#secret-value")))
	token, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#secret-value")))
	if err != nil || !strings.HasPrefix(token, "copt_live_") {
		t.Fatalf("the token on the page: %q %v", token, err)
	}
	if focused := evalIn[string](t, ctx, "document.activeElement.id"); focused != "secret-value" {
		t.Errorf("the shown-once token is not focused: %q", focused)
	}
	screenshot(t, ctx, "02-token-shown-once")

	// The API with it, from the test.
	if r := s.get(t, "/api/v1/customers", token); r.status != 200 {
		t.Fatalf("the token on the API: %d %s", r.status, r.body)
	}
	inBrowser(t, ctx, "reload the list", chromedp.Navigate(base+"/tokens"), chromedp.WaitVisible(chromedp.CSS("table.list")))
	row := textOf(t, ctx, "tr[data-token]")
	if !strings.Contains(row, "Browser sync") || !strings.Contains(row, "customers:read, orders:read") ||
		!strings.Contains(row, "127.0.0.1") || !strings.Contains(row, " UTC from ") {
		t.Fatalf("the token's row after a use: %q", row)
	}
	if html := evalIn[string](t, ctx, "document.documentElement.outerHTML"); strings.Contains(html, token) {
		t.Fatal("the token is on the page again")
	}
	screenshot(t, ctx, "03-tokens-last-used")

	// Keyboard: the first Tab reaches the skip link, which moves focus to
	// the content. A phone's width needs no sideways scrolling.
	inBrowser(t, ctx, "tab", chromedp.KeyEvent("\t"))
	if f := evalIn[string](t, ctx, "document.activeElement.className"); f != "skip" {
		t.Errorf("the first Tab focuses %q, not the skip link", f)
	}
	inBrowser(t, ctx, "phone width", chromedp.EmulateViewport(390, 844), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("table.list")))
	if wide := evalIn[bool](t, ctx, "document.documentElement.scrollWidth > window.innerWidth + 1"); wide {
		t.Errorf("the tokens page scrolls sideways on a phone (%d px wide)", evalIn[int](t, ctx, "document.documentElement.scrollWidth"))
	}
	screenshot(t, ctx, "03b-tokens-phone")
	inBrowser(t, ctx, "laptop width", chromedp.EmulateViewport(1280, 900))

	// Rotate: a new secret once; the old one stops.
	inBrowser(t, ctx, "rotate",
		chromedp.Click(chromedp.CSS("tr[data-token] details:nth-of-type(1) summary")),
		chromedp.Click(chromedp.CSS("tr[data-token] form[action$='/rotate'] button")),
		chromedp.WaitVisible(chromedp.CSS("#secret-value")))
	rotated, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#secret-value")))
	if rotated == "" || rotated == token {
		t.Fatalf("rotated secret %q", rotated)
	}
	if r := s.get(t, "/api/v1/customers", token); r.status != 401 {
		t.Fatalf("the old secret after rotation: %d", r.status)
	}
	// Revoke.
	inBrowser(t, ctx, "revoke",
		chromedp.Navigate(base+"/tokens"),
		chromedp.WaitVisible(chromedp.CSS("table.list")),
		chromedp.Click(chromedp.CSS("tr[data-token] details:nth-of-type(2) summary")),
		chromedp.Click(chromedp.CSS("tr[data-token] form[action$='/revoke'] button")),
		chromedp.WaitVisible(chromedp.CSS("p.notice")))
	if n := textOf(t, ctx, "p.notice"); !strings.Contains(n, "revoked") {
		t.Fatalf("notice after revoke: %q", n)
	}
	if r := s.get(t, "/api/v1/customers", rotated); r.status != 401 {
		t.Fatalf("the revoked token: %d", r.status)
	}

	// A form posted from another site (another origin) is refused.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/tokens"><input name="name" value="Planted">`+
			`<input name="scopes" value="*"><input name="confirm_all" value="yes"></form><button id="go" onclick="document.getElementById('f').submit()">go</button>`, base)
	}))
	defer evil.Close()
	inBrowser(t, ctx, "the cross-site form",
		chromedp.Navigate(strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)),
		chromedp.WaitVisible(chromedp.CSS("#go")),
		chromedp.Click(chromedp.CSS("#go")),
		chromedp.WaitVisible(chromedp.CSS("h1")))
	if h := textOf(t, ctx, "h1"); h != "Refused" {
		t.Fatalf("the cross-site post: %q", h)
	}
	if strings.Contains(string(s.get(t, "/api/v1/api-keys", tn.token).body), "Planted") {
		t.Fatal("the cross-site post made a token")
	}
	screenshot(t, ctx, "04-cross-site-refused")

	// Another account's shop: 404.
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(s.base+"/admin/shops/"+other.shopID+"/tokens"))
	if err != nil || resp.Status != 404 {
		t.Fatalf("another account's shop: %v %v", resp, err)
	}

	// A read-only user: no create form, and a post from the page is 403.
	inBrowser(t, ctx, "sign out", chromedp.Navigate(s.base+"/admin"), chromedp.Click(chromedp.CSS("form[action='/admin/logout'] button")),
		chromedp.WaitVisible(chromedp.CSS("#email")))
	signIn("reader@browser-a.example.com")
	inBrowser(t, ctx, "read-only tokens page", chromedp.Navigate(base+"/tokens"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	if n := evalIn[int](t, ctx, "document.querySelectorAll('#token-name, form[action$=\"/revoke\"]').length"); n != 0 {
		t.Fatalf("the read-only user sees %d token forms", n)
	}
	status := evalIn[int](t, ctx, `fetch(location.pathname, {method: "POST", body: new URLSearchParams({name: "Sneaky", scopes: "customers:read"})}).then(r => r.status)`)
	if status != 403 {
		t.Fatalf("a read-only user's token post: %d", status)
	}
	if strings.Contains(string(s.get(t, "/api/v1/api-keys", tn.token).body), "Sneaky") {
		t.Fatal("the read-only user made a token")
	}
	screenshot(t, ctx, "05-read-only-tokens")
}

// TestAdminInBrowserKeysWebhooksNotifications: issue 22's browser tests
// of the image-key form (the warning appears as images:write is ticked,
// no one-click "*", the key shown once), a webhook subscription's secret
// (shown once, then never again on any page or answer) and a P1
// notification with the header's unread count.
func TestAdminInBrowserKeysWebhooksNotifications(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, fastWebhooks)
	v := openapitest.NewValidator(t)
	rm := messagingDB(t, dir)
	wt := connectWhatsApp(t, s, rm, "browser-keys.example.com", "agency", "7404")
	waitForToken(t, s, wt.tenant)
	const password = "correct horse battery staple"
	if code, _, errOut := cliStdin(t, dir, password+"\n", "users", "create", "--account", wt.accountID, "--email", "owner@browser-keys.example.com",
		"--role", "owner", "--password-stdin"); code != 0 {
		t.Fatalf("users create: %s", errOut)
	}
	ctx := newBrowser(t)
	base := s.base + "/admin/shops/" + wt.shopID
	inBrowser(t, ctx, "sign in",
		chromedp.Navigate(s.base+"/admin/login"),
		chromedp.WaitVisible(chromedp.CSS("#email")),
		chromedp.SendKeys(chromedp.CSS("#email"), "owner@browser-keys.example.com"),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Click(chromedp.CSS("form[action='/admin/login'] button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("ul.shops")))

	// The image-key form: read-only scopes ticked, the warning appears as
	// soon as images:write is ticked, no "*".
	inBrowser(t, ctx, "image keys", chromedp.Navigate(base+"/image-keys"), chromedp.WaitReady(chromedp.CSS("#imgwrite-warning")))
	if ticked := evalIn[string](t, ctx, `[...document.querySelectorAll("input[name=scopes]:checked")].map(i => i.value).join(",")`); ticked != "usage:read,images:read" {
		t.Fatalf("scopes ticked by default: %q", ticked)
	}
	if n := evalIn[int](t, ctx, `document.querySelectorAll("input[name=scopes][value='*']").length`); n != 0 {
		t.Fatal("the mint form offers *")
	}
	if evalIn[bool](t, ctx, `!document.getElementById("imgwrite-warning").hidden`) {
		t.Fatal("the warning shows before images:write is ticked")
	}
	inBrowser(t, ctx, "tick images:write", chromedp.Click(chromedp.CSS("input[name=scopes][value='images:write']")),
		chromedp.WaitVisible(chromedp.CSS("#imgwrite-warning")))
	screenshot(t, ctx, "06-image-key-warning")
	inBrowser(t, ctx, "mint", chromedp.Click(chromedp.CSS("form[action$='/image-keys'] button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#secret-value")))
	key, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#secret-value")))
	if !strings.HasPrefix(key, "cik_") {
		t.Fatalf("the minted key %q", key)
	}
	if r := do(t, http.MethodGet, s.base+"/api/v1/usage", nil, map[string]string{"X-API-Key": key}); r.status != 200 {
		t.Fatalf("the minted key on the image API: %d", r.status)
	}
	screenshot(t, ctx, "07-image-key-shown-once")

	// A webhook subscription: its secret is shown once.
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer receiver.Close()
	inBrowser(t, ctx, "create a subscription",
		chromedp.Navigate(base+"/webhooks"),
		chromedp.WaitVisible(chromedp.CSS("#webhook-url")),
		chromedp.SendKeys(chromedp.CSS("#webhook-url"), receiver.URL+"/hooks"),
		chromedp.Click(chromedp.CSS("input[name=event_types]:not([value='*'])")),
		chromedp.Click(chromedp.CSS("form[action$='/webhooks'] button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#secret-value")))
	secret, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#secret-value")))
	if len(secret) < 20 {
		t.Fatalf("the webhook secret %q", secret)
	}
	screenshot(t, ctx, "08-webhook-secret-shown-once")
	inBrowser(t, ctx, "the list", chromedp.Navigate(base+"/webhooks"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	pages := []string{evalIn[string](t, ctx, "document.documentElement.outerHTML")}
	subPage := evalIn[string](t, ctx, `(document.querySelector("a[href*='/webhooks/whs_']") || {}).href || ""`)
	if subPage == "" {
		t.Fatalf("no link to the subscription in the list")
	}
	inBrowser(t, ctx, "the subscription", chromedp.Navigate(subPage), chromedp.WaitVisible(chromedp.CSS("main h1")))
	pages = append(pages, evalIn[string](t, ctx, "document.documentElement.outerHTML"))
	screenshot(t, ctx, "09-webhook-subscription")
	api := s.get(t, "/api/v1/webhook-subscriptions", wt.token)
	pages = append(pages, string(api.body))
	for i, p := range pages {
		if strings.Contains(p, secret) {
			t.Fatalf("the webhook secret is shown again (%d)", i)
		}
	}

	// A P1 notification: the header counts it.
	if got := textOf(t, ctx, "#unread-count"); got != "0" {
		t.Fatalf("unread before: %q", got)
	}
	deliverForAnomalies(t, s, v, rm, wt, waFixture(t, "template_paused", wt.waba))
	eventually(t, time.Minute, "the header's unread count", func() bool {
		inBrowser(t, ctx, "notifications", chromedp.Navigate(base+"/notifications"), chromedp.WaitVisible(chromedp.CSS("#unread-count")))
		return textOf(t, ctx, "#unread-count") == "1"
	})
	if list := textOf(t, ctx, "main"); !strings.Contains(list, "P1") {
		t.Fatalf("the notification list: %q", list)
	}
	screenshot(t, ctx, "10-notifications-p1")
}
