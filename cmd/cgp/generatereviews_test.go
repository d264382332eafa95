package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestDevGenerateReviews (issue 20's figures): `cgp dev generate-reviews`
// records N reviews of a product, each by its own customer, with ratings
// from 1 to 5, some verified; with --publish-all every one is published
// and the storefront reads all N with their summary through a public key;
// the e-mails never show and are sealed in the log; a second run records
// nothing; without --publish-all only what the shop's rule publishes
// shows.
func TestDevGenerateReviews(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "genreviews.example.com", "agency", "*")
	pk := cli(t, dir, "public-keys", "create", "--shop", tn.shopID)["token"].(string)
	const n = 30
	out := cli(t, dir, "dev", "generate-reviews", "--shop", tn.shopID, "--product", "9000000000001", "--reviews", fmt.Sprint(n), "--workers", "4")
	product := domain.ProductIDFromExternal(tn.shopID, "9000000000001")
	if out["product_id"] != product || out["created"] != float64(n) || out["published"] != float64(n) || out["existing"] != float64(0) {
		t.Fatalf("generate-reviews: %v", out)
	}
	list := func(query, pos string) map[string]any {
		t.Helper()
		r := do(t, http.MethodGet, s.base+"/api/public/reviews?"+query, nil, map[string]string{"X-Public-Key": pk, "X-Wait-For-Position": pos})
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != http.StatusOK || bytes.Contains(r.body, []byte("@shop.example.test")) {
			t.Fatalf("GET /api/public/reviews?%s: %d %s", query, r.status, r.body)
		}
		return r.json(t)
	}
	pos := fmtAny(out["position"])
	seen, ratings, verified := map[string]bool{}, map[float64]int{}, 0
	query := "product_id=" + product + "&limit=20"
	for query != "" {
		doc := list(query, pos)
		for _, d := range doc["data"].([]any) {
			a := attrs(d.(map[string]any))
			seen[d.(map[string]any)["id"].(string)] = true
			ratings[a["rating"].(float64)]++
			if a["verified"] == true {
				verified++
			}
		}
		sum := doc["meta"].(map[string]any)["summary"].(map[string]any)
		if sum["count"] != float64(n) {
			t.Fatalf("summary: %v", sum)
		}
		query = ""
		if p := doc["pagination"].(map[string]any); p["has_next"] == true {
			query = "product_id=" + product + "&limit=20&cursor=" + url.QueryEscape(p["next_cursor"].(string))
		}
	}
	if len(seen) != n || len(ratings) < 4 || verified == 0 || verified == n {
		t.Fatalf("%d reviews listed, ratings %v, %d verified", len(seen), ratings, verified)
	}
	// Sealed in the log like a real review's; the read model keeps no
	// e-mail either.
	if found := (erasedValues{"reviewer7@shop.example.test"}).findIn(t, dir); len(found) > 0 {
		t.Fatalf("a reviewer's e-mail is in the clear: %v", found)
	}

	again := cli(t, dir, "dev", "generate-reviews", "--shop", tn.shopID, "--product", "9000000000001", "--reviews", fmt.Sprint(n))
	if again["created"] != float64(0) || again["existing"] != float64(n) {
		t.Fatalf("second run: %v", again)
	}

	// Without --publish-all, the default rule publishes the verified
	// reviews rated 4 or 5 only.
	other := cli(t, dir, "dev", "generate-reviews", "--shop", tn.shopID, "--product", "9000000000002", "--reviews", fmt.Sprint(n),
		"--publish-all=false")
	published := int(other["published"].(float64))
	if published == 0 || published == n {
		t.Fatalf("rule-published: %v", other)
	}
	doc := list("product_id=9000000000002&limit=100", fmtAny(other["position"]))
	if got := len(doc["data"].([]any)); got != published {
		t.Fatalf("%d reviews listed, want the %d the rule published", got, published)
	}
	for _, d := range doc["data"].([]any) {
		if a := attrs(d.(map[string]any)); a["verified"] != true || a["rating"].(float64) < 4 {
			t.Fatalf("the rule published %v", a)
		}
	}

	// Usage errors.
	var o, e bytes.Buffer
	if code := Run(t.Context(), []string{"dev", "generate-reviews", "--shop", tn.shopID, "--product", "shirt", "--data-dir", dir}, &o, &e); code == 0 {
		t.Fatalf("a product that is no id: exit 0: %s", o.String())
	}
}
