package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/limits/memory"
)

// tokens is an in-memory token directory.
type tokens map[string]*auth.Token

func (m tokens) TokenByHash(_ context.Context, hash string) (*auth.Token, error) {
	if t, ok := m[hash]; ok {
		return t, nil
	}
	return nil, domain.NotFound("token")
}

func newAuth(t testing.TB) (*auth.Authenticator, string) {
	t.Helper()
	raw, _ := domain.NewAdminToken("live")
	guard, err := memory.NewGuard(memory.GuardConfig{})
	if err != nil {
		t.Fatal(err)
	}
	limiter, err := memory.NewLimiter(memory.LimiterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(auth.Config{
		Tokens: tokens{domain.HashToken(raw): {ID: "tok_1", ShopID: "shop_1", Hash: domain.HashToken(raw),
			Scopes: []domain.Scope{"customers:read"}, ShopPlan: domain.PlanAgency}},
		Guard: guard, Limits: limiter,
	})
	return a, raw
}

func TestCacheDropsOnInvalidateAndRevoke(t *testing.T) {
	a, raw := newAuth(t)
	h := a.Require("customers:read", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	call := func() int {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+raw)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if c := call(); c != 204 {
		t.Fatalf("valid token: %d", c)
	}
	a.Revoke(domain.HashToken(raw))
	if c := call(); c != 401 {
		t.Fatalf("revoked token: %d", c)
	}
}

// FuzzCredentialHeaders feeds hostile Authorization, X-API-Key and
// X-Public-Key values: the answer is always a 2xx or a 4xx in the error
// envelope, never a panic or a 5xx.
func FuzzCredentialHeaders(f *testing.F) {
	f.Add("Bearer copt_live_"+strings.Repeat("A", 32), "", "")
	f.Add("bearer  ", "cik_live_x", "pk_live_")
	f.Add("Basic Zm9vOmJhcg==", strings.Repeat("k", 300), "\x00")
	f.Fuzz(func(t *testing.T, authorization, apiKey, publicKey string) {
		a, _ := newAuth(t)
		ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })
		for _, h := range []http.Handler{a.Require("customers:read", ok), a.RequireMaster(true, ok)} {
			r := httptest.NewRequest("GET", "/", nil)
			r.Header["Authorization"] = []string{authorization}
			r.Header["X-Api-Key"] = []string{apiKey}
			r.Header["X-Public-Key"] = []string{publicKey}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code >= 500 || (w.Code >= 400 && !strings.Contains(w.Body.String(), `"error"`)) {
				t.Fatalf("%q: %d %s", authorization, w.Code, w.Body)
			}
		}
	})
}
