package main

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
)

// adminReview is a review's attributes as GET /api/v1/reviews/{id} shows
// them.
func adminReview(t *testing.T, s *testServer, tn tenant, id string) map[string]any {
	t.Helper()
	r := s.get(t, "/api/v1/reviews/"+id, tn.token)
	if r.status != http.StatusOK {
		t.Fatalf("GET /api/v1/reviews/%s: %d %s", id, r.status, r.body)
	}
	return attrs(data(r, t))
}

// TestAdminReviewsPage: issue 22's reviews page over real HTTP: reviews
// submitted on the storefront wait in the pending queue; publishing,
// rejecting (the API's reason required) and replying through the forms
// are visible through the API; the status filter is a GET form; the
// auto-publish settings form shows the API's validation with the form
// kept and saves what the API then answers; a read-only user sees no form
// and is refused a post that changes nothing; another account's shop is
// 404.
func TestAdminReviewsPage(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	tn := newTenant(t, dir, "admin-reviews.example.com", "agency", "*")
	other := newTenant(t, dir, "admin-reviews-other.example.com", "agency", "*")
	waitForToken(t, s, tn)
	rm := readModels(t, dir)
	const product = int64(8123456789012)
	// Three buyers with orders not fulfilled: their reviews are not
	// verified, so the default rule leaves them pending.
	var last uint64
	for i := int64(1); i <= 4; i++ {
		last = s.deliver(t, tn, "orders/create", fmt.Sprintf("adm-rv-%d", i),
			reviewOrder(t, "orders/create", 94000000+i, 7400000+i, fmt.Sprintf("buyer%d@admin-reviews.example", i)))
	}
	waitProjected(t, rm, "commerce", last)
	ids := make([]string, 3)
	for i := range ids {
		n := i + 1
		r := do(t, http.MethodPost, s.base+"/api/public/reviews", reviewBody(map[string]any{"product_id": fmt.Sprint(product),
			"rating": 3 + i, "title": fmt.Sprintf("Title number %d", n), "body": fmt.Sprintf("Body of review %d", n),
			"author_name": fmt.Sprintf("Buyer %d", n), "author_email": fmt.Sprintf("buyer%d@admin-reviews.example", n),
			"order_id": fmt.Sprint(94000000 + n)}), map[string]string{"Content-Type": "application/json",
			"Origin": "https://" + tn.domain, "X-Shop-Domain": tn.domain, "X-Forwarded-For": fmt.Sprintf("10.9.0.%d", n)})
		if r.status != http.StatusAccepted || attrs(data(r, t))["status"] != "pending" {
			t.Fatalf("review %d: %d %s", n, r.status, r.body)
		}
		ids[i] = data(r, t)["id"].(string)
	}
	owner := signInAs(t, s, dir, tn.accountID, "owner@admin-reviews.example.com", "owner", "127.0.0.1")
	reader := signInAs(t, s, dir, tn.accountID, "reader@admin-reviews.example.com", "read_only", "127.0.0.1")
	base := "/admin/shops/" + tn.shopID

	var queue response
	eventually(t, 15*time.Second, "the pending queue", func() bool {
		queue = owner.get(t, base+"/reviews")
		return strings.Count(string(queue.body), `<td class="status">pending</td>`) == 3
	})
	checkAdminHeaders(t, "reviews page", queue)
	pageHas(t, "the queue", queue, "Title number 1", "Body of review 2", "Buyer 3", "<td><code>prd_", "not verified",
		`action="`+base+`/reviews/`+ids[0]+`/publish"`, `action="`+base+`/reviews/`+ids[1]+`/reject"`, `name="reason"`,
		`action="`+base+`/reviews/settings"`, `name="min_rating"`)

	// Publish.
	if r := owner.post(t, base+"/reviews/"+ids[0]+"/publish", nil); r.status != 303 ||
		!strings.HasPrefix(r.header.Get("Location"), base+"/reviews?notice=") {
		t.Fatalf("publish: %d %s", r.status, r.body)
	}
	eventually(t, 15*time.Second, "published through the API", func() bool { return adminReview(t, s, tn, ids[0])["status"] == "published" })
	// Reject: the API wants a reason; the refusal is on the page.
	if r := owner.post(t, base+"/reviews/"+ids[1]+"/reject", url.Values{"reason": {""}}); r.status != 422 ||
		!strings.Contains(string(r.body), "reason") || !strings.Contains(string(r.body), `role="alert"`) {
		t.Fatalf("reject without a reason: %d %s", r.status, r.body)
	}
	if r := owner.post(t, base+"/reviews/"+ids[1]+"/reject", url.Values{"reason": {"Off-topic"}}); r.status != 303 {
		t.Fatalf("reject: %d %s", r.status, r.body)
	}
	eventually(t, 15*time.Second, "rejected through the API", func() bool {
		a := adminReview(t, s, tn, ids[1])
		return a["status"] == "rejected" && a["rejection_reason"] == "Off-topic"
	})
	// Reply: a reply of markup only is the API's 422, the text kept in
	// its open form.
	if r := owner.post(t, base+"/reviews/"+ids[2]+"/reply", url.Values{"body": {"<i></i>"}}); r.status != 422 ||
		!strings.Contains(string(r.body), `rows="3">&lt;i&gt;&lt;/i&gt;</textarea>`) || !strings.Contains(string(r.body), "<details open>") {
		t.Fatalf("an empty reply: %d %s", r.status, r.body)
	}
	// Reply.
	if r := owner.post(t, base+"/reviews/"+ids[2]+"/reply", url.Values{"body": {"Thank you for the kind words"}}); r.status != 303 {
		t.Fatalf("reply: %d %s", r.status, r.body)
	}
	eventually(t, 15*time.Second, "the reply through the API", func() bool {
		rep, _ := adminReview(t, s, tn, ids[2])["reply"].(map[string]any)
		return rep != nil && rep["body"] == "Thank you for the kind words"
	})
	// The moderation is the user's in the audit history.
	for _, id := range ids {
		if a := s.get(t, "/api/v1/audit-events?filter[stream]=review-"+id, tn.token); a.status != 200 || !strings.Contains(string(a.body), `"user:usr_`) {
			t.Fatalf("audit of review %s: %d %s", id, a.status, a.body)
		}
	}
	// The status filter.
	pub := owner.get(t, base+"/reviews?status=published")
	pageHas(t, "published filter", pub, ids[0], `<option value="published" selected>`)
	if strings.Contains(string(pub.body), ids[1]) || strings.Contains(string(pub.body), ids[2]) {
		t.Fatalf("the published filter shows others: %s", pub.body)
	}
	pending := owner.get(t, base+"/reviews")
	pageHas(t, "pending queue", pending, ids[2], "Thank you for the kind words")
	if strings.Contains(string(pending.body), ids[0]) || strings.Contains(string(pending.body), ids[1]) {
		t.Fatalf("the pending queue shows moderated reviews: %s", pending.body)
	}
	pageHas(t, "every review", owner.get(t, base+"/reviews?status=all"), ids[0], ids[1], ids[2], "Rejected: Off-topic")

	// Settings: the API's validation, the form kept; then saved.
	bad := owner.post(t, base+"/reviews/settings", url.Values{"enabled": {"yes"}, "min_rating": {"9"}})
	if bad.status != 422 || !strings.Contains(string(bad.body), "min_rating") || !strings.Contains(string(bad.body), `name="min_rating" inputmode="numeric" value="9"`) {
		t.Fatalf("settings with min_rating 9: %d %s", bad.status, bad.body)
	}
	if r := owner.post(t, base+"/reviews/settings", url.Values{"enabled": {"yes"}, "min_rating": {"5"}}); r.status != 303 {
		t.Fatalf("settings: %d %s", r.status, r.body)
	}
	settings := func() map[string]any {
		r := s.get(t, "/api/v1/reviews/settings", tn.token)
		if r.status != 200 {
			t.Fatalf("GET /api/v1/reviews/settings: %d %s", r.status, r.body)
		}
		return attrs(data(r, t))["auto_publish"].(map[string]any)
	}
	eventually(t, 15*time.Second, "the settings through the API", func() bool {
		a := settings()
		return a["enabled"] == true && a["require_verified"] == false && a["min_rating"] == float64(5)
	})
	pageHas(t, "settings shown", owner.get(t, base+"/reviews"), `value="5"`)

	// Pages of 25: a fourth buyer reviews 25 more products; the queue's
	// second page holds the oldest pending review.
	for i := range 25 {
		r := do(t, http.MethodPost, s.base+"/api/public/reviews", reviewBody(map[string]any{"product_id": fmt.Sprint(8200000000000 + i),
			"rating": 2, "body": fmt.Sprintf("Paged review %d", i), "author_name": "Buyer 4", "author_email": "buyer4@admin-reviews.example",
			"order_id": "94000004"}), map[string]string{"Content-Type": "application/json", "Origin": "https://" + tn.domain,
			"X-Shop-Domain": tn.domain, "X-Forwarded-For": fmt.Sprintf("10.9.1.%d", i)})
		if r.status != http.StatusAccepted {
			t.Fatalf("paged review %d: %d %s", i, r.status, r.body)
		}
	}
	var first response
	// The reviews are folded in order: once the last one is on the page,
	// every one is (25 pending on the page alone could be 24 new and the
	// old one, before the last is folded).
	eventually(t, time.Minute, "a full first page", func() bool {
		first = owner.get(t, base+"/reviews")
		return strings.Count(string(first.body), `<td class="status">pending</td>`) == 25 &&
			strings.Contains(string(first.body), "Paged review 24")
	})
	if strings.Contains(string(first.body), ids[2]) {
		t.Fatal("the oldest pending review is on the first page")
	}
	m := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindStringSubmatch(string(first.body))
	if m == nil {
		t.Fatalf("no next page: %s", first.body)
	}
	second := owner.get(t, html.UnescapeString(m[1]))
	if second.status != 200 || strings.Count(string(second.body), `<td class="status">pending</td>`) != 1 || !strings.Contains(string(second.body), ids[2]) ||
		strings.Contains(string(second.body), `rel="next"`) {
		t.Fatalf("the second page: %d %s", second.status, second.body)
	}

	// The read-only user reads, and changes nothing.
	ro := reader.get(t, base+"/reviews")
	if ro.status != 200 || strings.Contains(string(ro.body), "/publish") || strings.Contains(string(ro.body), `name="min_rating"`) ||
		!strings.Contains(string(ro.body), "Paged review 24") {
		t.Fatalf("read-only reviews page: %d %s", ro.status, ro.body)
	}
	if r := reader.post(t, base+"/reviews/"+ids[2]+"/publish", nil); r.status != 403 {
		t.Fatalf("read-only publish: %d", r.status)
	}
	if r := reader.post(t, base+"/reviews/settings", url.Values{"min_rating": {"1"}}); r.status != 403 {
		t.Fatalf("read-only settings: %d", r.status)
	}
	if a := adminReview(t, s, tn, ids[2]); a["status"] != "pending" {
		t.Fatalf("the read-only post published: %v", a)
	}
	if a := settings(); a["min_rating"] != float64(5) {
		t.Fatalf("the read-only post changed the settings: %v", a)
	}

	// Another account's shop is not found, for reads and posts.
	if r := owner.get(t, "/admin/shops/"+other.shopID+"/reviews"); r.status != 404 {
		t.Fatalf("another account's reviews: %d", r.status)
	}
	if r := owner.post(t, "/admin/shops/"+other.shopID+"/reviews/settings", url.Values{"min_rating": {"1"}}); r.status != 404 {
		t.Fatalf("another account's settings: %d", r.status)
	}
}

// TestAdminStorefrontPage: issue 22's storefront page over real HTTP: an
// origin added through the form is on the API's allow-list and removed
// from it; a bad origin is the API's 422 with the form kept; a public key
// created through the form is shown once, works on the public API and is
// listed by its last four characters only; rotating shows the new key once
// and stops the old; revoking stops it; a read-only user's posts are 403
// and change nothing; another account's shop is 404.
func TestAdminStorefrontPage(t *testing.T) {
	dir := t.TempDir()
	s := behindProxy(t, dir, nil)
	tn := newTenant(t, dir, "admin-storefront.example.com", "agency", "*")
	other := newTenant(t, dir, "admin-storefront-other.example.com", "agency", "*")
	waitForToken(t, s, tn)
	owner := signInAs(t, s, dir, tn.accountID, "owner@admin-storefront.example.com", "owner", "127.0.0.1")
	reader := signInAs(t, s, dir, tn.accountID, "reader@admin-storefront.example.com", "read_only", "127.0.0.1")
	base := "/admin/shops/" + tn.shopID

	empty := owner.get(t, base+"/storefront")
	checkAdminHeaders(t, "storefront page", empty)
	pageHas(t, "storefront page", empty, `action="`+base+`/storefront/origins"`, `name="origin"`, `action="`+base+`/storefront/public-keys"`,
		"No origin allowed yet", "No public key yet")

	origins := func() []string {
		r := s.get(t, "/api/v1/shop/allowed-origins", tn.token)
		if r.status != 200 {
			t.Fatalf("GET /api/v1/shop/allowed-origins: %d %s", r.status, r.body)
		}
		var out []string
		for _, x := range r.json(t)["data"].([]any) {
			out = append(out, x.(map[string]any)["id"].(string))
		}
		return out
	}
	hasOrigin := func(host string) bool { return slices.Contains(origins(), host) }

	// Add an origin; a bad one is the API's refusal with the form kept.
	bad := owner.post(t, base+"/storefront/origins", url.Values{"origin": {"ftp://nowhere"}})
	if bad.status != 422 || !strings.Contains(string(bad.body), `value="ftp://nowhere"`) || !strings.Contains(string(bad.body), "origin") {
		t.Fatalf("a bad origin: %d %s", bad.status, bad.body)
	}
	add := owner.post(t, base+"/storefront/origins", url.Values{"origin": {"https://front.admin-storefront.example.net"}})
	if add.status != 303 || !strings.HasPrefix(add.header.Get("Location"), base+"/storefront?notice=") {
		t.Fatalf("add an origin: %d %s", add.status, add.body)
	}
	eventually(t, 15*time.Second, "the origin on the API's list", func() bool { return hasOrigin("front.admin-storefront.example.net") })
	pageHas(t, "the origin listed", owner.get(t, base+"/storefront"), "<code>https://front.admin-storefront.example.net</code>",
		`action="`+base+`/storefront/origins/front.admin-storefront.example.net/remove"`)

	// The read-only user: the API refuses the lists, no form, posts 403.
	ro := reader.get(t, base+"/storefront")
	if ro.status != 200 || strings.Contains(string(ro.body), `name="origin"`) || strings.Contains(string(ro.body), "/remove") ||
		!strings.Contains(string(ro.body), `role="alert">Your role (read-only) does not show this: this operation requires the scope *`) {
		t.Fatalf("read-only storefront page: %d %s", ro.status, ro.body)
	}
	if r := reader.post(t, base+"/storefront/origins/front.admin-storefront.example.net/remove", nil); r.status != 403 {
		t.Fatalf("read-only remove: %d", r.status)
	}
	if r := reader.post(t, base+"/storefront/origins", url.Values{"origin": {"https://sneaky.example.net"}}); r.status != 403 {
		t.Fatalf("read-only add: %d", r.status)
	}
	if r := reader.post(t, base+"/storefront/public-keys", url.Values{"environment": {"live"}}); r.status != 403 || secretOf(r) != "" {
		t.Fatalf("read-only create key: %d", r.status)
	}
	if got := origins(); !slices.Equal(got, []string{"front.admin-storefront.example.net"}) {
		t.Fatalf("after the read-only posts: %v", got)
	}

	if r := owner.post(t, base+"/storefront/origins/front.admin-storefront.example.net/remove", nil); r.status != 303 {
		t.Fatalf("remove: %d %s", r.status, r.body)
	}
	eventually(t, 15*time.Second, "the origin off the API's list", func() bool { return !hasOrigin("front.admin-storefront.example.net") })

	// Public keys: created (shown once), rotated (shown once), revoked.
	public := func(key string) int {
		return do(t, http.MethodGet, s.base+"/api/public/reviews?product_id=8123456789012", nil, map[string]string{"X-Public-Key": key}).status
	}
	made := owner.post(t, base+"/storefront/public-keys", url.Values{"environment": {"live"}})
	key := secretOf(made)
	if made.status != 201 || key == "" {
		t.Fatalf("create a public key: %d %s", made.status, made.body)
	}
	eventually(t, 15*time.Second, "the new public key works", func() bool { return public(key) == 200 })
	keys := func() []map[string]any {
		r := s.get(t, "/api/v1/public-keys", tn.token)
		if r.status != 200 || strings.Contains(string(r.body), key) {
			t.Fatalf("GET /api/v1/public-keys: %d %s", r.status, r.body)
		}
		var out []map[string]any
		for _, x := range r.json(t)["data"].([]any) {
			a := attrs(x.(map[string]any))
			a["id"] = x.(map[string]any)["id"]
			out = append(out, a)
		}
		return out
	}
	listed := keys()
	if len(listed) != 1 || listed[0]["last4"] != key[len(key)-4:] || listed[0]["revoked_at"] != nil {
		t.Fatalf("the API's keys: %v", listed)
	}
	id := listed[0]["id"].(string)
	list := owner.get(t, base+"/storefront")
	pageHas(t, "the key listed", list, id, "ends in <code>"+key[len(key)-4:]+"</code>", `action="`+base+`/storefront/public-keys/`+id+`/rotate"`)
	if strings.Contains(string(list.body), key) || secretOf(list) != "" {
		t.Fatal("the public key is shown again")
	}
	if r := reader.post(t, base+"/storefront/public-keys/"+id+"/revoke", nil); r.status != 403 {
		t.Fatalf("read-only revoke: %d", r.status)
	}
	rot := owner.post(t, base+"/storefront/public-keys/"+id+"/rotate", nil)
	rotated := secretOf(rot)
	if rot.status != 200 || rotated == "" || rotated == key {
		t.Fatalf("rotate: %d %s", rot.status, rot.body)
	}
	if st := public(key); st != 401 {
		t.Fatalf("the old public key after rotation: %d", st)
	}
	eventually(t, 15*time.Second, "the rotated public key works", func() bool { return public(rotated) == 200 })
	if k := keys(); k[0]["rotated_at"] == nil || k[0]["last4"] != rotated[len(rotated)-4:] {
		t.Fatalf("the API's keys after rotation: %v", k)
	}
	if r := owner.post(t, base+"/storefront/public-keys/"+id+"/revoke", nil); r.status != 303 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if st := public(rotated); st != 401 {
		t.Fatalf("the revoked public key: %d", st)
	}
	eventually(t, 15*time.Second, "revoked through the API", func() bool { return keys()[0]["revoked_at"] != nil })
	after := owner.get(t, base+"/storefront")
	pageHas(t, "the revoked key", after, "revoked ")
	if strings.Contains(string(after.body), `/storefront/public-keys/`+id+`/rotate"`) {
		t.Fatal("a revoked key still offers rotation")
	}

	// Another account's shop is not found.
	if r := owner.get(t, "/admin/shops/"+other.shopID+"/storefront"); r.status != 404 {
		t.Fatalf("another account's storefront: %d", r.status)
	}
	if r := owner.post(t, "/admin/shops/"+other.shopID+"/storefront/origins", url.Values{"origin": {"https://x.example.net"}}); r.status != 404 {
		t.Fatalf("another account's origins: %d", r.status)
	}
}

// TestAdminInstallPage: issue 22's install and scopes page over real
// HTTP: a shop installed through the platform with a grant lacking a
// declared scope shows the scope missing beside the declared ones, the
// re-consent link, the feature it powers off with the reason, and theme
// tracking off with the link; a shop made with the CLI shows its grant
// unknown; an uninstalled shop shows the day its data is erased; a
// read-only user reads the page; another account's shop is 404.
func TestAdminInstallPage(t *testing.T) {
	dir := t.TempDir()
	fp := newFakePlatform(t)
	const shop = "admin-install.myshopify.com"
	var grant []string
	for _, sc := range domain.DeclaredPlatformScopes() {
		if sc != "read_themes" {
			grant = append(grant, sc)
		}
	}
	fp.setGrant(shop, strings.Join(grant, ","))
	s := startServerWith(t, dir, func(c *Config) { fp.configure(c); c.TrustedProxies = []string{"127.0.0.1/32"} })
	id := installShop(t, s, fp, shop)
	account := ""
	for _, x := range cli(t, dir, "shops", "list")["shops"].([]any) {
		if m := x.(map[string]any); m["id"] == id {
			account = m["account_id"].(string)
		}
	}
	cliShop := newTenant(t, dir, "admin-install-cli.example.com", "agency", "*")
	owner := signInAs(t, s, dir, account, "owner@admin-install.example.com", "owner", "127.0.0.1")
	reader := signInAs(t, s, dir, account, "reader@admin-install.example.com", "read_only", "127.0.0.1")
	cliOwner := signInAs(t, s, dir, cliShop.accountID, "owner@admin-install-cli.example.com", "owner", "127.0.0.1")
	base := "/admin/shops/" + id

	p := owner.get(t, base+"/install")
	checkAdminHeaders(t, "install page", p)
	pageHas(t, "install page", p, `<dd class="install-state">installed</dd>`, "The app is connected", "Scopes missing",
		`<tr data-scope="read_themes" class="missing">`, "<strong>missing</strong>",
		`<a class="reconsent" href="http://127.0.0.1:0/auth/install?shop=`+shop+`">`,
		`<tr data-scope="write_products">`, "granted",
		`<tr data-feature="`+domain.FeatureThemeIncidents+`">`, "off: the shop has not granted the platform scope read_themes",
		"Theme changes are not tracked:", "No theme incident.")
	if strings.Count(string(p.body), `class="missing"`) != 1 {
		t.Fatalf("one scope is missing, the page marks %d: %s", strings.Count(string(p.body), `class="missing"`), p.body)
	}

	// A shop made with the CLI: no platform session, the grant unknown.
	c := cliOwner.get(t, "/admin/shops/"+cliShop.shopID+"/install")
	pageHas(t, "CLI shop's install page", c, "Grant unknown:", "not connected", "platform grant is not known", ">unknown<")
	if strings.Contains(string(c.body), `class="missing"`) || strings.Contains(string(c.body), "Scopes missing") {
		t.Fatalf("an unknown grant shown as missing scopes: %s", c.body)
	}

	// Once the CLI shop grants read_themes, a theme publish followed by
	// rankings that drop is an incident on the page.
	scopes := []byte(`{"id":660136150,"previous":[],"current":["read_orders","write_products","read_themes"],"updated_at":"2026-11-01T10:00:00Z"}`)
	if r := s.webhook(t, cliShop, "app/scopes_update", "dlv-admin-scopes", scopes); r.status != http.StatusOK {
		t.Fatalf("scopes update: %d %s", r.status, r.body)
	}
	s.deliver(t, cliShop, shopify.TopicThemesPublish, "dlv-admin-thm", themePublish(t, "141234567890", "Dawn - spring 2026", "2026-03-10T07:30:00-05:00"))
	const site = "https://admin-install-cli.example.com/p/"
	cli(t, dir, "seo", "import", "--shop", cliShop.shopID, writeFile(t, "rankings.csv", rankingHeader+
		"running shoes,"+site+"runner,3,12000,40,900,2026-03-09\n"+"running shoes,"+site+"runner,9,12000,20,700,2026-03-12\n"+
		"trail shoes,"+site+"trail,5,3000,5,200,2026-03-08\n"+"trail shoes,"+site+"trail,11,3000,2,150,2026-03-14\n"+
		"socks,"+site+"socks,4,500,9,80,2026-03-09\n"+"socks,"+site+"socks,5,500,9,80,2026-03-12\n"))
	eventually(t, 15*time.Second, "the theme incident on the page", func() bool {
		r := cliOwner.get(t, "/admin/shops/"+cliShop.shopID+"/install")
		return strings.Contains(string(r.body), `<tr data-incident="tin_20260310">`) && strings.Contains(string(r.body), "Dawn - spring 2026") &&
			strings.Contains(string(r.body), "2 of 3") && strings.Contains(string(r.body), "running shoes: 3 → 9") &&
			!strings.Contains(string(r.body), "Theme changes are not tracked")
	})

	// The read-only user reads the page; the shop view is the API's `*`.
	ro := reader.get(t, base+"/install")
	if ro.status != 200 || !strings.Contains(string(ro.body), `role="alert"`) || !strings.Contains(string(ro.body), "install-state") {
		t.Fatalf("read-only install page: %d %s", ro.status, ro.body)
	}
	// Another account's shop is not found.
	if r := owner.get(t, "/admin/shops/"+cliShop.shopID+"/install"); r.status != 404 {
		t.Fatalf("another account's install page: %d", r.status)
	}
	if r := cliOwner.get(t, base+"/install"); r.status != 404 {
		t.Fatalf("another account's install page: %d", r.status)
	}

	// Uninstalled: the day the data is erased.
	tn := tenant{shopID: id, domain: shop, secret: fp.Secret}
	un := []byte(`{"id":1,"name":"Atelier","email":"owner@example.com","domain":"` + shop + `","myshopify_domain":"` + shop + `"}`)
	if r := s.webhook(t, tn, "app/uninstalled", "dlv-admin-uninstall", un); r.status != http.StatusOK {
		t.Fatalf("uninstall: %d %s", r.status, r.body)
	}
	eventually(t, 15*time.Second, "the page shows the uninstall", func() bool {
		r := owner.get(t, base+"/install")
		return r.status == 200 && strings.Contains(string(r.body), "uninstalled "+time.Now().UTC().Format("2006-01-02")) &&
			strings.Contains(string(r.body), "the shop's data is erased on ")
	})
}
