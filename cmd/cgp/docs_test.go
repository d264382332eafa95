package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestAPIReferenceAndLandingPage: the server answers /docs with the
// reference generated from openapi.yaml (every answer under a strict CSP),
// filters it with ?q=, revalidates with its ETag, and / links to the
// admin interface, the reference and the document.
func TestAPIReferenceAndLandingPage(t *testing.T) {
	s := startServer(t, t.TempDir())
	check := func(r response, contentType string) {
		t.Helper()
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), contentType) {
			t.Fatalf("%s: %d %s", r.req.URL.Path, r.status, r.header.Get("Content-Type"))
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", r.req.URL.Path, csp)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", r.req.URL.Path)
		}
		// The validator decodes JSON bodies only: the headers the
		// document declares are checked here.
		if r.header.Get("ETag") == "" || r.header.Get("X-Request-Id") == "" || r.header.Get("X-Service-Stability") != "beta" {
			t.Errorf("%s: headers %v", r.req.URL.Path, r.header)
		}
	}

	docs := do(t, http.MethodGet, s.base+"/docs", nil, nil)
	check(docs, "text/html")
	page := string(docs.body)
	for _, want := range []string{
		`id="listCustomers"`, `<code class="path">/api/v1/customers</code>`, "scope <code>customers:read</code>",
		`id="receiveCommerceWebhook"`, `href="/docs/assets/docs.css?v=`, `src="/docs/assets/docs.js?v=`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("/docs lacks %q", want)
		}
	}

	filtered := do(t, http.MethodGet, s.base+"/docs?q="+url.QueryEscape("webhook"), nil, nil)
	check(filtered, "text/html")
	if !strings.Contains(string(filtered.body), `id="receiveCommerceWebhook"`) || strings.Contains(string(filtered.body), `<code class="path">/api/v1/customers</code>`) {
		t.Errorf("/docs?q=webhook did not keep only the webhook operations")
	}

	etag := docs.header.Get("ETag")
	again := do(t, http.MethodGet, s.base+"/docs", nil, map[string]string{"If-None-Match": etag})
	if etag == "" || again.status != http.StatusNotModified || len(again.body) != 0 {
		t.Errorf("If-None-Match %q: %d", etag, again.status)
	}
	openapitest.ValidateResponse(t, again.req, again.resp, again.body)

	redirected := do(t, http.MethodGet, s.base+"/docs/", nil, nil)
	if redirected.status != http.StatusOK || redirected.resp.Request.URL.Path != "/docs" {
		t.Errorf("/docs/: %d at %s", redirected.status, redirected.resp.Request.URL.Path)
	}

	for _, asset := range []string{"/docs/assets/docs.css", "/docs/assets/docs.js"} {
		r := do(t, http.MethodGet, s.base+asset, nil, nil)
		check(r, map[bool]string{true: "text/css", false: "text/javascript"}[strings.HasSuffix(asset, ".css")])
	}

	landing := do(t, http.MethodGet, s.base+"/", nil, nil)
	check(landing, "text/html")
	for _, link := range []string{`href="/docs"`, `href="/admin"`, `href="/api/v1/openapi.json"`} {
		if !strings.Contains(string(landing.body), link) {
			t.Errorf("/ lacks a link %s", link)
		}
	}
}
