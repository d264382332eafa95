package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/projections/tenancy"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// installedTenant is an installed shop with an admin token.
func installedTenant(t *testing.T, s *testServer, fp *fakePlatform, shop, scopes string) tenant {
	t.Helper()
	id := installShop(t, s, fp, shop)
	tok := cli(t, s.dir, "tokens", "create", "--shop", id, "--scopes", scopes)
	tn := tenant{shopID: id, domain: shop, secret: fp.Secret, token: tok["token"].(string), position: uint64(tok["position"].(float64))}
	waitForToken(t, s, tn)
	return tn
}

func countShopType(t *testing.T, dir, typ, shop string) int {
	t.Helper()
	n := 0
	for _, e := range readLog(t, dir) {
		if e.Type == typ && (shop == "" || e.ShopID == shop) {
			n++
		}
	}
	return n
}

// shopPlatform is the platform section of GET /api/v1/shop.
func shopPlatform(t *testing.T, s *testServer, v *openapitest.Validator, tn tenant, extra ...string) map[string]any {
	t.Helper()
	r := s.get(t, "/api/v1/shop", tn.token, extra...)
	v.ValidateResponse(t, r.req, r.resp, r.body)
	if r.status != http.StatusOK {
		t.Fatalf("GET /api/v1/shop: %d %s", r.status, r.body)
	}
	return r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)["platform"].(map[string]any)
}

func TestInstallThroughThePlatform(t *testing.T) {
	dir := t.TempDir()
	fp := newFakePlatform(t)
	s := startServerWith(t, dir, fp.configure)
	v := openapitest.NewValidator(t)
	const shop = "atelier-install.myshopify.com"

	// The install link redirects to the consent screen with the app's
	// client id, the declared scopes, the callback and a state.
	b := browser(t)
	start := browse(t, b, s.base+"/auth/install?shop="+shop)
	v.ValidateResponse(t, start.req, start.resp, start.body)
	if start.status != http.StatusFound {
		t.Fatalf("install: %d %s", start.status, start.body)
	}
	to, _ := url.Parse(start.header.Get("Location"))
	q := to.Query()
	if !strings.HasPrefix(to.String(), fp.URL+"/"+shop+"/admin/oauth/authorize?") || q.Get("client_id") != fp.ClientID ||
		q.Get("scope") != strings.Join(domain.DeclaredPlatformScopes(), ",") || !strings.HasSuffix(q.Get("redirect_uri"), "/auth/callback") ||
		len(q.Get("state")) < 40 {
		t.Fatalf("authorize redirect %s", to)
	}
	consent := browse(t, b, to.String())
	callback := callbackOn(t, s, consent.header.Get("Location"))

	// Refused: a tampered callback (the code changed under the hmac), a
	// browser the state was not issued to, a foreign state.
	tampered := strings.Replace(callback, "code=code", "code=codf", 1)
	if r := browse(t, b, tampered); r.status != http.StatusUnauthorized || r.errorCode(t) != "invalid_signature" {
		t.Fatalf("tampered callback: %d %s", r.status, r.body)
	}
	if r := browse(t, browser(t), callback); r.status != http.StatusBadRequest || r.errorCode(t) != "invalid_parameter" {
		t.Fatalf("callback in another browser: %d %s", r.status, r.body)
	}
	done := browse(t, b, callback)
	v.ValidateResponse(t, done.req, done.resp, done.body)
	if done.status != http.StatusFound || done.header.Get("Location") != "http://127.0.0.1:0/admin?shop="+shop {
		t.Fatalf("callback: %d %s → %q", done.status, done.body, done.header.Get("Location"))
	}
	// The same callback again (a replayed state) is refused and stores
	// nothing more.
	if r := browse(t, b, callback); r.status != http.StatusBadRequest || r.errorCode(t) != "invalid_parameter" {
		t.Fatalf("replayed state: %d %s", r.status, r.body)
	}
	// Not a shop domain of the platform: refused before any redirect.
	for _, bad := range []string{"evil.example.com", "x.myshopify.com.evil.example", "127.0.0.1", "a.b.myshopify.com", "X.MYSHOPIFY.COM", ""} {
		r := browse(t, browser(t), s.base+"/auth/install?shop="+url.QueryEscape(bad))
		if r.status != http.StatusBadRequest || r.errorCode(t) != "invalid_parameter" {
			t.Fatalf("install for %q: %d %s", bad, r.status, r.body)
		}
	}
	// A platform-signed install link must verify.
	signed := url.Values{"shop": {shop}, "timestamp": {fmt.Sprint(time.Now().Unix())}}
	fp.sign(signed)
	if r := browse(t, browser(t), s.base+"/auth/install?"+signed.Encode()); r.status != http.StatusFound {
		t.Fatalf("signed install link: %d %s", r.status, r.body)
	}
	signed.Set("shop", "other.myshopify.com")
	if r := browse(t, browser(t), s.base+"/auth/install?"+signed.Encode()); r.status != http.StatusUnauthorized {
		t.Fatalf("install link with a forged shop: %d %s", r.status, r.body)
	}

	shops := cli(t, dir, "shops", "list")["shops"].([]any)
	if len(shops) != 1 || shops[0].(map[string]any)["domain"] != shop || shops[0].(map[string]any)["plan"] != "agency" {
		t.Fatalf("shops after the install: %v", shops)
	}
	id := shops[0].(map[string]any)["id"].(string)
	if n := countShopType(t, dir, "AppInstalled", id); n != 1 {
		t.Fatalf("%d AppInstalled, want 1", n)
	}
	if n := countShopType(t, dir, "PlatformSessionStored", id); n != 1 {
		t.Fatalf("%d sessions stored, want 1", n)
	}

	// Every topic the grant allows is registered on the platform: the
	// scopes update at its own path, the others at /webhooks/events; the
	// three privacy topics are the app configuration's.
	eventually(t, time.Minute, "webhook subscriptions registered", func() bool { return len(fp.registered(shop)) == 24 })
	for _, sub := range fp.registered(shop) {
		want := "http://127.0.0.1:0/webhooks/events"
		if sub.Topic == "APP_SCOPES_UPDATE" {
			want = "http://127.0.0.1:0/webhooks/app/scopes_update"
		}
		if sub.URI != want || sub.Topic == "SHOP_REDACT" {
			t.Fatalf("subscription %+v", sub)
		}
	}
	eventually(t, time.Minute, "registration recorded", func() bool { return countShopType(t, dir, "PlatformWebhooksRegistered", id) == 1 })

	// The platform signs the shop's webhooks with the app's secret: they
	// are received.
	tn := tenant{shopID: id, domain: shop, secret: fp.Secret}
	if r := s.webhook(t, tn, "customers/create", "dlv-install-1", customerPayload(9001, "ada@example.com", 0, "0.00", "2026-11-01T10:00:00Z")); r.status != http.StatusOK {
		t.Fatalf("webhook signed with the app secret: %d %s", r.status, r.body)
	}

	// The shop's view shows the grant and the session; the session is
	// sealed in the read model.
	tok := cli(t, dir, "tokens", "create", "--shop", id, "--scopes", "*")
	tn.token, tn.position = tok["token"].(string), uint64(tok["position"].(float64))
	waitForToken(t, s, tn)
	p := shopPlatform(t, s, v, tn)
	if p["connected"] != true || p["grant_known"] != true || p["needs_reconsent"] != false || len(p["missing"].([]any)) != 0 ||
		p["reauthorize_url"] != "http://127.0.0.1:0/auth/install?shop="+shop {
		t.Fatalf("platform view %v", p)
	}
	for _, f := range p["features"].([]any) {
		if f.(map[string]any)["available"] != true {
			t.Fatalf("feature off with the full grant: %v", f)
		}
	}
	store, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(dir, "readmodels.db")})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := tenancy.NewQueries(store.DB()).PlatformSession(context.Background(), id)
	store.Close()
	if err != nil || !strings.HasPrefix(sess.AccessToken, "sec1:") {
		t.Fatalf("stored session %+v %v: want the token sealed", sess, err)
	}

	// Uninstalled, then installed again: the countdown is cancelled.
	un := []byte(`{"id":1,"name":"Atelier","email":"owner@example.com","domain":"` + shop + `","myshopify_domain":"` + shop + `"}`)
	if r := s.webhook(t, tn, "app/uninstalled", "dlv-uninstall-1", un); r.status != http.StatusOK {
		t.Fatalf("uninstall: %d %s", r.status, r.body)
	}
	eventually(t, time.Minute, "countdown started", func() bool {
		c := cli(t, dir, "shops", "retention")
		l, _ := c["countdowns"].([]any)
		return len(l) == 1
	})
	if again := installShop(t, s, fp, shop); again != id {
		t.Fatalf("reinstall made shop %s, want %s", again, id)
	}
	if n := countShopType(t, dir, "AppReinstalled", id); n != 1 {
		t.Fatalf("%d AppReinstalled, want 1", n)
	}
	eventually(t, time.Minute, "countdown cancelled", func() bool {
		l, _ := cli(t, dir, "shops", "retention")["countdowns"].([]any)
		return len(l) == 0
	})
}

func TestGrantedScopesReconsentAndRefresh(t *testing.T) {
	dir := t.TempDir()
	fp := newFakePlatform(t)
	fp.ExpiresIn = 3600
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	v := openapitest.NewValidator(t)
	const shop = "scopes-install.myshopify.com"
	// The platform stores the grant collapsed (write_X stands for
	// read_X too) and, here, without read_themes.
	var collapsed []string
	for _, sc := range domain.DeclaredPlatformScopes() {
		if rest, ok := strings.CutPrefix(sc, "read_"); ok && slices.Contains(domain.DeclaredPlatformScopes(), "write_"+rest) || sc == "read_themes" {
			continue
		}
		collapsed = append(collapsed, sc)
	}
	fp.setGrant(shop, strings.Join(collapsed, ","))
	s := startServerWith(t, dir, func(c *Config) { fp.configure(c); c.Test.PlatformClock = clock })
	tn := installedTenant(t, s, fp, shop, "*")
	p := shopPlatform(t, s, v, tn)
	if got := toStrings(p["missing"]); !slices.Equal(got, []string{"read_themes"}) || p["needs_reconsent"] != true {
		t.Fatalf("collapsed grant without read_themes: missing %v", got)
	}
	for _, f := range p["features"].([]any) {
		f := f.(map[string]any)
		if f["name"] == domain.FeatureThemeIncidents && (f["available"] != false || !strings.Contains(f["reason"].(string), "read_themes")) {
			t.Fatalf("theme incidents without read_themes: %v", f)
		}
		if f["name"] == domain.FeatureCatalogueSync && f["available"] != true {
			t.Fatalf("write_products granted, catalogue sync off: %v", f)
		}
	}
	// Theme topics wait for the scope.
	eventually(t, time.Minute, "webhooks registered", func() bool { return len(fp.registered(shop)) == 22 })
	// The merchant is told to re-consent, with the link.
	eventually(t, time.Minute, "re-consent notification", func() bool {
		r := s.get(t, "/api/v1/notifications", tn.token)
		return strings.Contains(string(r.body), "platform_reconsent_required") && strings.Contains(string(r.body), "read_themes")
	})

	// An hour later the token is about to expire: the next call refreshes
	// it first. app/scopes_update (the re-consent done, read_themes
	// granted) makes the registrar call the platform.
	mu.Lock()
	now = now.Add(58 * time.Minute)
	mu.Unlock()
	full := `["` + strings.Join(append(collapsed, "read_themes"), `","`) + `"]`
	body := []byte(`{"id":1,"previous":[],"current":` + full + `,"updated_at":"2026-11-28T10:00:00Z"}`)
	r := do(t, http.MethodPost, s.base+"/webhooks/app/scopes_update", body, webhookHeaders(tn, "app/scopes_update", "dlv-reconsent-1", body))
	if r.status != http.StatusOK {
		t.Fatalf("scopes update: %d %s", r.status, r.body)
	}
	eventually(t, time.Minute, "theme topics registered after the re-consent", func() bool { return len(fp.registered(shop)) == 24 })
	if fp.refreshed() != 1 || countShopType(t, dir, "PlatformSessionStored", tn.shopID) != 2 {
		t.Fatalf("refreshes %d, sessions %d: want the expiring token refreshed once", fp.refreshed(), countShopType(t, dir, "PlatformSessionStored", tn.shopID))
	}
	p = shopPlatform(t, s, v, tn, "X-Wait-For-Position", r.position(t))
	if len(p["missing"].([]any)) != 0 || p["needs_reconsent"] != false {
		t.Fatalf("after the re-consent: %v", p)
	}
	eventually(t, time.Minute, "re-consent resolved", func() bool {
		r := s.get(t, "/api/v1/notifications", tn.token)
		var doc struct {
			Data []struct {
				Attributes struct {
					Kind       string  `json:"kind"`
					ResolvedAt *string `json:"resolved_at"`
				} `json:"attributes"`
			} `json:"data"`
		}
		if json.Unmarshal(r.body, &doc) != nil {
			return false
		}
		for _, n := range doc.Data {
			if n.Attributes.Kind == domain.AnomalyPlatformReconsent {
				return n.Attributes.ResolvedAt != nil
			}
		}
		return false
	})
	s.stop()

	// The app declares one scope more: every install lacking it needs
	// re-consent.
	s = startServerWith(t, dir, func(c *Config) {
		fp.configure(c)
		c.Test.PlatformClock = clock
		c.PlatformScopes = append(domain.DeclaredPlatformScopes(), "read_reports")
	})
	p = shopPlatform(t, s, v, tn)
	if got := toStrings(p["missing"]); !slices.Equal(got, []string{"read_reports"}) || p["needs_reconsent"] != true {
		t.Fatalf("after the declaration grew: missing %v", got)
	}
	eventually(t, time.Minute, "re-consent for the new scope", func() bool {
		r := s.get(t, "/api/v1/notifications", tn.token)
		return strings.Contains(string(r.body), "read_reports")
	})
}
