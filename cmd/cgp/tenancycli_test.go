package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestCLIUnknownShopIsAnError runs every command that takes --shop with a
// shop id and a domain that name no shop: each fails with exit 1 and says
// so (audit verify once answered "intact", tokens list an empty list).
func TestCLIUnknownShopIsAnError(t *testing.T) {
	dir := t.TempDir()
	tn := newTenant(t, dir, "known.example.com", "agency", "*")
	var withShop [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Flags().Lookup("shop") != nil {
			if c.Args != nil && c.Args(c, nil) != nil {
				path = append(path, "positional-argument") // e.g. seo import FILE
			}
			withShop = append(withShop, path)
		}
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(newRootCommand(nil, nil), nil)
	if len(withShop) < 15 {
		t.Fatalf("only %d commands take --shop: %v", len(withShop), withShop)
	}
	for _, path := range withShop {
		for _, shop := range []string{"shop_nope", tn.domain} {
			args := append(append([]string{}, path...), "--shop", shop, "--data-dir", dir)
			code, stdout, stderr := runCLI(args...)
			if code != exitFailure || stdout != "" || !strings.Contains(stderr, "shop not found") || (shop != tn.domain && !strings.Contains(stderr, "cgp shops list")) {
				t.Errorf("cgp %s: exit %d, stdout %q, stderr %q; want exit 1 naming the unknown shop", strings.Join(args, " "), code, stdout, stderr)
			}
			if shop == tn.domain && (!strings.Contains(stderr, "not a domain") || !strings.Contains(stderr, "--shop "+tn.shopID)) {
				t.Errorf("cgp %s: stderr %q does not say --shop takes an id, and which", strings.Join(args, " "), stderr)
			}
		}
	}
	// The known shop still works.
	if v := cli(t, dir, "audit", "verify", "--shop", tn.shopID); v["intact"] != true {
		t.Fatalf("audit verify of a known shop: %v", v)
	}
	if v := cli(t, dir, "tokens", "list", "--shop", tn.shopID); len(v["tokens"].([]any)) != 1 {
		t.Fatalf("tokens list of a known shop: %v", v)
	}
}

// TestCLIShopsAndAccountsList: a user who lost the demo output finds their
// accounts and shops (never a secret).
func TestCLIShopsAndAccountsList(t *testing.T) {
	dir := t.TempDir()
	a := newTenant(t, dir, "first.example.com", "agency", "*")
	b := newTenant(t, dir, "second.example.com", "enterprise", "*")
	code, stdout, stderr := runCLI("shops", "list", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("shops list: exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, a.secret) || strings.Contains(stdout, b.secret) {
		t.Fatalf("shops list shows a webhook secret: %s", stdout)
	}
	var shops struct {
		Shops []ShopListing `json:"shops"`
	}
	if err := json.Unmarshal([]byte(stdout), &shops); err != nil {
		t.Fatal(err)
	}
	if len(shops.Shops) != 2 || shops.Shops[0].ID != a.shopID || shops.Shops[0].Domain != a.domain ||
		shops.Shops[1].ID != b.shopID || shops.Shops[1].AccountID != b.accountID || shops.Shops[1].Plan != "enterprise" {
		t.Fatalf("shops list: %+v", shops.Shops)
	}
	only := cli(t, dir, "shops", "list", "--account", b.accountID)
	if got := only["shops"].([]any); len(got) != 1 || got[0].(map[string]any)["id"] != b.shopID {
		t.Fatalf("shops list --account: %v", only)
	}
	acc := cli(t, dir, "accounts", "list")["accounts"].([]any)
	if len(acc) != 2 || acc[0].(map[string]any)["id"] != a.accountID || acc[1].(map[string]any)["plan"] != "enterprise" {
		t.Fatalf("accounts list: %v", acc)
	}
}

// TestDemoRestartPrintsHowToMakeAToken: the demo token is shown once; a
// restart on the same data directory says how to make another, and the
// commands it prints work.
func TestDemoRestartPrintsHowToMakeAToken(t *testing.T) {
	dir := t.TempDir()
	demo := func(c *Config) { c.Demo = true }
	s := startServerWith(t, dir, demo)
	if out := s.stdout.String(); !strings.Contains(out, "admin token:") {
		t.Fatalf("first start: %q", out)
	}
	s.stop()
	s = startServerWith(t, dir, demo)
	out := s.stdout.String()
	if strings.Contains(out, "admin token:") || !strings.Contains(out, "bin/cgp shops list --data-dir "+dir) ||
		!strings.Contains(out, "bin/cgp tokens create --data-dir "+dir+" --scopes '*' --shop SHOP_ID") {
		t.Fatalf("restart: %q", out)
	}
	shops := cli(t, dir, "shops", "list")["shops"].([]any)
	shop := shops[0].(map[string]any)
	if shop["domain"] != "demo-shop.example.com" {
		t.Fatalf("demo shop: %v", shop)
	}
	tok := cli(t, dir, "tokens", "create", "--scopes", "*", "--shop", shop["id"].(string))
	if r := s.get(t, "/api/v1/customers", tok["token"].(string), "X-Wait-For-Position", fmtAny(tok["position"])); r.status != 200 {
		t.Fatalf("new token: %d %s", r.status, r.body)
	}
}
