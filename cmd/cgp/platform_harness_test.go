package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/platformapi"
)

// fakePlatform serves the commerce platform's documented OAuth and Admin
// GraphQL contract (Shopify's) from httptest, one host for every shop
// (the server's --platform-api-url is fp.URL+"/{shop}"): the consent
// screen approves at once (as a merchant clicking "Install" would) and
// redirects to the app's redirect_uri with a signed code; the token
// endpoint exchanges codes (single use) and refresh tokens; the GraphQL
// endpoint checks the access token and answers webhookSubscriptionCreate
// and any mutation a test registers in Mutations.
type fakePlatform struct {
	*httptest.Server
	ClientID, Secret string

	mu sync.Mutex
	// Grant is the scope string the next code is issued with, per shop
	// ("" : the scopes the app asked for).
	Grant map[string]string
	// ExpiresIn is the access tokens' lifetime in seconds (0: none).
	ExpiresIn int
	codes     map[string]fakeCode // code → its grant
	tokens    map[string]string   // access token → shop
	refreshes map[string]string   // refresh token → shop
	scopes    map[string]string   // shop → granted scope string
	// Registered are the webhook subscriptions created, per shop.
	Registered map[string][]fakeSubscription
	// Calls counts the GraphQL calls per mutation name.
	Calls map[string]int
	// Refreshed counts the refresh grants.
	Refreshed int
	// Mutations answer other GraphQL operations by the name of their
	// first field (orderCancel, refundCreate, …): data for "data".
	Mutations map[string]func(shop string, vars map[string]any) any
	n         int
}

type fakeCode struct{ shop, scope string }

type fakeSubscription struct{ Topic, URI string }

func newFakePlatform(t *testing.T) *fakePlatform {
	t.Helper()
	fp := &fakePlatform{ClientID: "cgp-test-client", Secret: "shpss_" + strings.Repeat("s", 32),
		Grant: map[string]string{}, codes: map[string]fakeCode{}, tokens: map[string]string{}, refreshes: map[string]string{},
		scopes: map[string]string{}, Registered: map[string][]fakeSubscription{}, Calls: map[string]int{},
		Mutations: map[string]func(string, map[string]any) any{}}
	fp.Server = httptest.NewServer(http.HandlerFunc(fp.serve))
	t.Cleanup(fp.Close)
	return fp
}

// configure points a server's configuration at the fake platform.
func (fp *fakePlatform) configure(c *Config) {
	c.PlatformAPIURL = fp.URL + "/{shop}"
	c.PlatformClientID, c.PlatformClientSecret = fp.ClientID, fp.Secret
	c.OutboundAllowPrivate = true
	c.InstallPlan = "agency"
}

// sign signs q as the platform signs its redirects.
func (fp *fakePlatform) sign(q url.Values) {
	keys := make([]string, 0, len(q))
	for k := range q {
		if k != "hmac" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + q.Get(k)
	}
	m := hmac.New(sha256.New, []byte(fp.Secret))
	m.Write([]byte(strings.Join(parts, "&")))
	q.Set("hmac", hex.EncodeToString(m.Sum(nil)))
}

func (fp *fakePlatform) next(prefix string) string {
	fp.n++
	return prefix + strconv.Itoa(fp.n) + strings.Repeat("x", 16)
}

func (fp *fakePlatform) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)
	if len(parts) != 2 {
		http.NotFound(w, r)
		return
	}
	shop, path := parts[0], "/"+parts[1]
	fp.mu.Lock()
	defer fp.mu.Unlock()
	switch {
	case path == "/admin/oauth/authorize" && r.Method == http.MethodGet:
		q := r.URL.Query()
		if q.Get("client_id") != fp.ClientID || q.Get("state") == "" || q.Get("redirect_uri") == "" {
			http.Error(w, "bad authorize request", http.StatusBadRequest)
			return
		}
		scope := fp.Grant[shop]
		if scope == "" {
			scope = q.Get("scope")
		}
		code := fp.next("code")
		fp.codes[code] = fakeCode{shop: shop, scope: scope}
		back := url.Values{"code": {code}, "shop": {shop}, "state": {q.Get("state")},
			"timestamp": {strconv.FormatInt(time.Now().Unix(), 10)}, "host": {"YWRtaW4uc2hvcGlmeS5jb20"}}
		fp.sign(back)
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+back.Encode(), http.StatusFound)
	case path == "/admin/oauth/access_token" && r.Method == http.MethodPost:
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body["client_id"] != fp.ClientID || body["client_secret"] != fp.Secret {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_client","error_description":"bad client credentials"}`)
			return
		}
		var scope string
		if body["grant_type"] == "refresh_token" {
			rt, _ := body["refresh_token"].(string)
			if fp.refreshes[rt] != shop {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"invalid_grant","error_description":"unknown refresh token"}`)
				return
			}
			delete(fp.refreshes, rt)
			scope = fp.scopes[shop]
			fp.Refreshed++
		} else {
			c, ok := fp.codes[body["code"].(string)]
			if !ok || c.shop != shop {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":"invalid_request","error_description":"The authorization code was not found or was already used"}`)
				return
			}
			delete(fp.codes, body["code"].(string))
			scope = c.scope
			fp.scopes[shop] = scope
		}
		at, rt := fp.next("shpat_"), fp.next("shprt_")
		fp.tokens[at], fp.refreshes[rt] = shop, shop
		resp := map[string]any{"access_token": at, "scope": scope}
		if fp.ExpiresIn > 0 {
			resp["expires_in"], resp["refresh_token"], resp["refresh_token_expires_in"] = fp.ExpiresIn, rt, 7776000
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	case path == "/admin/api/"+platformapi.DefaultAPIVersion+"/graphql.json" && r.Method == http.MethodPost:
		if fp.tokens[r.Header.Get("X-Shopify-Access-Token")] != shop {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":"[API] Invalid API key or access token (unrecognized login or wrong password)"}`)
			return
		}
		var req struct {
			Query     string         `json:"query"`
			Variables map[string]any `json:"variables"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		name := graphqlField(req.Query)
		fp.Calls[name]++
		var data any
		switch {
		case name == "webhookSubscriptionCreate":
			sub, _ := req.Variables["webhookSubscription"].(map[string]any)
			uri, _ := sub["uri"].(string)
			topic, _ := req.Variables["topic"].(string)
			for _, s := range fp.Registered[shop] {
				if s.Topic == topic && s.URI == uri {
					data = map[string]any{name: map[string]any{"webhookSubscription": nil,
						"userErrors": []any{map[string]any{"field": []string{"callbackUrl"}, "message": "Address for this topic has already been taken"}}}}
				}
			}
			if data == nil {
				fp.Registered[shop] = append(fp.Registered[shop], fakeSubscription{Topic: topic, URI: uri})
				data = map[string]any{name: map[string]any{"webhookSubscription": map[string]any{"id": "gid://shopify/WebhookSubscription/" + strconv.Itoa(len(fp.Registered[shop]))},
					"userErrors": []any{}}}
			}
		case fp.Mutations[name] != nil:
			data = fp.Mutations[name](shop, req.Variables)
		default:
			http.Error(w, "unknown operation "+name, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
	default:
		http.NotFound(w, r)
	}
}

// graphqlField is the name of the first field of an operation's selection
// (mutation m($a: T) { orderCancel(…) { … } } → orderCancel).
func graphqlField(q string) string {
	i := strings.Index(q, "{")
	if i < 0 {
		return ""
	}
	rest := strings.TrimSpace(q[i+1:])
	end := strings.IndexAny(rest, "({ \n")
	if end < 0 {
		return rest
	}
	return rest[:end]
}

// registered returns the topics registered for shop.
func (fp *fakePlatform) registered(shop string) []fakeSubscription {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return append([]fakeSubscription(nil), fp.Registered[shop]...)
}

// calls returns how many times a GraphQL operation was called.
func (fp *fakePlatform) calls(name string) int {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return fp.Calls[name]
}

// refreshed returns how many refresh grants the platform answered.
func (fp *fakePlatform) refreshed() int {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return fp.Refreshed
}

// setGrant sets the scope string the platform grants shop at its next
// consent ("": what the app asks for).
func (fp *fakePlatform) setGrant(shop, scope string) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	fp.Grant[shop] = scope
}

// browser is a merchant's browser: a cookie jar, redirects not followed
// (each step is checked).
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// browse GETs u with the browser.
func browse(t *testing.T, b *http.Client, u string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := b.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: body, req: req, resp: resp}
}

// callbackOn is the platform's redirect to the app's callback, sent to s
// (the callback address the server builds holds its configured, not its
// bound, address).
func callbackOn(t *testing.T, s *testServer, location string) string {
	t.Helper()
	u, err := url.Parse(location)
	if err != nil || u.Path != "/auth/callback" {
		t.Fatalf("platform redirected to %q, want the app's /auth/callback", location)
	}
	return s.base + "/auth/callback?" + u.RawQuery
}

// installFlow runs a merchant's install of shop through the server and
// the platform: /auth/install, the consent screen, the callback. It
// returns the callback's answer (302 to the admin interface on success).
func installFlow(t *testing.T, s *testServer, fp *fakePlatform, b *http.Client, shop string) response {
	t.Helper()
	start := browse(t, b, s.base+"/auth/install?shop="+url.QueryEscape(shop))
	if start.status != http.StatusFound {
		t.Fatalf("/auth/install: %d %s", start.status, start.body)
	}
	consent := browse(t, b, start.header.Get("Location"))
	if consent.status != http.StatusFound {
		t.Fatalf("consent screen: %d %s", consent.status, consent.body)
	}
	return browse(t, b, callbackOn(t, s, consent.header.Get("Location")))
}

// installShop installs shop and returns its id (from the log, through the
// CLI) once the install is in the read models.
func installShop(t *testing.T, s *testServer, fp *fakePlatform, shop string) string {
	t.Helper()
	done := installFlow(t, s, fp, browser(t), shop)
	if done.status != http.StatusFound || !strings.Contains(done.header.Get("Location"), "/admin?shop=") {
		t.Fatalf("callback: %d %s (Location %q)", done.status, done.body, done.header.Get("Location"))
	}
	shops := cli(t, s.dir, "shops", "list")
	list, _ := shops["shops"].([]any)
	for _, x := range list {
		m := x.(map[string]any)
		if m["domain"] == shop {
			return m["id"].(string)
		}
	}
	t.Fatalf("installed shop %s not in cgp shops list: %v", shop, shops)
	return ""
}
