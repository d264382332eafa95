package domain_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestExpandImageScopesFollowsTheMintRules(t *testing.T) {
	cases := []struct {
		in   []string
		want string
	}{
		{[]string{"images:write"}, "images:read,images:write"},                                         // rule 1: implication at mint
		{[]string{"images:write", "usage:read", "images:read"}, "usage:read,images:read,images:write"}, // rule 3: order, no duplicates
		{[]string{"images:read", "images:read"}, "images:read"},
		{[]string{"usage:read", "*"}, "*"}, // rule 3: collapse to *
		{[]string{}, ""},                   // inert
	}
	for _, c := range cases {
		got, err := domain.ExpandImageScopes(c.in)
		if err != nil {
			t.Fatalf("%v: %v", c.in, err)
		}
		var s []string
		for _, g := range got {
			s = append(s, string(g))
		}
		if strings.Join(s, ",") != c.want {
			t.Errorf("ExpandImageScopes(%v) = %v, want %s", c.in, s, c.want)
		}
	}
	if _, err := domain.ExpandImageScopes([]string{"images:delete"}); domain.ErrorCode(err) != domain.CodeInvalid { // rule 4
		t.Fatalf("unknown scope: %v", err)
	}
	if _, err := domain.ExpandImageScopes([]string{"customers:read"}); err == nil {
		t.Fatal("an admin scope was accepted for an image key")
	}
}

func TestImageScopesStatesAndExactMatch(t *testing.T) {
	legacy := domain.ImageScopes{}
	inert := domain.ImageScopes{Recorded: true}
	write := domain.ImageScopes{Recorded: true, List: []domain.Scope{"images:write"}} // stored without implication
	all := domain.ImageScopes{Recorded: true, List: []domain.Scope{"*"}}
	for _, s := range []domain.Scope{"usage:read", "images:read", "images:write"} {
		if !legacy.Allows(s) || inert.Allows(s) || !all.Allows(s) {
			t.Errorf("%s: legacy %v inert %v all %v", s, legacy.Allows(s), inert.Allows(s), all.Allows(s))
		}
	}
	// Rule 2: no implication at request time.
	if write.Allows("images:read") || !write.Allows("images:write") {
		t.Error("request-time check applied an implication")
	}
	// The three stored states survive a round trip distinctly.
	for _, c := range []struct {
		s    domain.ImageScopes
		json string
	}{{legacy, "null"}, {inert, "[]"}, {domain.ImageScopes{Recorded: true, List: []domain.Scope{"usage:read"}}, `["usage:read"]`}} {
		b, _ := json.Marshal(c.s)
		if string(b) != c.json {
			t.Errorf("marshal %+v = %s, want %s", c.s, b, c.json)
		}
		var back domain.ImageScopes
		if err := json.Unmarshal(b, &back); err != nil || back.Recorded != c.s.Recorded || len(back.List) != len(c.s.List) {
			t.Errorf("round trip of %s = %+v, %v", b, back, err)
		}
	}
}

func TestCredentialsAndTokenLifecycle(t *testing.T) {
	pk, err := domain.NewCredential(domain.PublicKeyPrefix, domain.EnvLive)
	if err != nil {
		t.Fatal(err)
	}
	if env, ok := domain.ParseCredential(domain.PublicKeyPrefix, pk); !ok || env != "live" {
		t.Fatalf("%q", pk)
	}
	if _, ok := domain.ParseAdminToken(pk); ok {
		t.Fatal("a public key parsed as an admin token")
	}
	if _, ok := domain.ParseCredential(domain.ImageKeyPrefix, pk); ok {
		t.Fatal("a public key parsed as an image key")
	}
	tok := &domain.Token{}
	if _, err := tok.Rotate("copt_live_x", time.Now()); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("rotate missing: %v", err)
	}
	tok.Apply(&domain.TokenIssued{TokenID: "tok_1", ShopID: "shop_1"})
	raw, _ := domain.NewAdminToken("live")
	rot, err := tok.Rotate(raw, time.Now())
	if err != nil || rot.Hash != domain.HashToken(raw) {
		t.Fatalf("rotate: %v %v", rot, err)
	}
	rev, err := tok.Revoke(time.Now())
	if err != nil || rev == nil {
		t.Fatalf("revoke: %v", err)
	}
	tok.Apply(rev)
	if again, err := tok.Revoke(time.Now()); again != nil || err != nil {
		t.Fatalf("second revoke: %v %v", again, err)
	}
	if _, err := tok.Rotate(raw, time.Now()); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("rotate revoked: %v", err)
	}
}

func TestPlatformScopesComparedOnTheImpliedSet(t *testing.T) {
	granted := []string{"write_customers", "read_orders", "write_products", "read_themes"}
	implied := strings.Join(domain.ImpliedPlatformScopes(granted), ",")
	for _, want := range []string{"read_customers", "write_customers", "read_products", "read_themes"} {
		if !strings.Contains(","+implied+",", ","+want+",") {
			t.Errorf("implied set %s lacks %s", implied, want)
		}
	}
	missing := domain.MissingPlatformScopes(domain.DeclaredPlatformScopes(), []string{"write_customers", "write_products"})
	has := func(s string) bool {
		for _, m := range missing {
			if m == s {
				return true
			}
		}
		return false
	}
	if has("read_customers") || has("read_products") || !has("read_themes") || !has("read_orders") {
		t.Fatalf("missing = %v", missing)
	}
	if len(domain.MissingPlatformScopes(domain.DeclaredPlatformScopes(), domain.DeclaredPlatformScopes())) != 0 {
		t.Fatal("the declared scopes miss something")
	}
}
