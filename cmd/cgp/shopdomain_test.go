package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestShopsCreateRefusesNonPublicDomains (point 13 of issue 14): `cgp
// shops create` refuses localhost, a port, an IP address, a local name
// and a public suffix as a shop's domain (or in its CORS allow-list),
// naming the field; a public DNS name is accepted as before.
func TestShopsCreateRefusesNonPublicDomains(t *testing.T) {
	dir := t.TempDir()
	acc := cli(t, dir, "accounts", "create", "--name", "Domains Co", "--plan", "agency")
	create := func(extra ...string) (int, string) {
		var out, errb bytes.Buffer
		args := append([]string{"shops", "create", "--data-dir", dir, "--account", acc["id"].(string), "--plan", "agency",
			"--webhook-secret", "domains-secret-0123456789"}, extra...)
		return Run(t.Context(), args, &out, &errb), errb.String()
	}
	for _, d := range []string{"localhost", "shop.example.com:443", "https://shop.example.com:8443/", "127.0.0.1", "[::1]",
		"printer.local", "db.internal", "api.localhost", "myshopify.com", "co.uk", "com"} {
		if code, stderr := create("--domain", d); code == 0 || !strings.Contains(stderr, "domain") {
			t.Errorf("domain %q: exit %d %q, want refused naming the domain", d, code, stderr)
		}
	}
	if code, stderr := create("--domain", "cors-ok.example.com", "--cors-allow-list", "localhost:3000"); code == 0 ||
		!strings.Contains(stderr, "cors_allow_list") {
		t.Errorf("CORS allow-list localhost:3000: exit %d %q", code, stderr)
	}
	for _, d := range []string{"shop.example.com", "brand.myshopify.com", "HTTPS://Www.Brand.co.uk/"} {
		if code, stderr := create("--domain", d); code != 0 {
			t.Errorf("domain %q: exit %d %s", d, code, stderr)
		}
	}
}
