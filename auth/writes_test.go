package auth_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// waits records the positions a wait function was called with.
type waits struct {
	mu  sync.Mutex
	got []uint64
	do  func(pos uint64)
}

func (w *waits) wait(_ context.Context, pos uint64) error {
	w.mu.Lock()
	w.got = append(w.got, pos)
	do := w.do
	w.mu.Unlock()
	if do != nil {
		do(pos)
	}
	return nil
}

func (w *waits) calls() []uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]uint64(nil), w.got...)
}

func call(h http.Handler, token string, hdr ...string) int {
	r := httptest.NewRequest("GET", "/", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

func TestReadYourWritesWaitsForTheCredentialsLastWrite(t *testing.T) {
	raw, _ := domain.NewAdminToken("live")
	other, _ := domain.NewAdminToken("live")
	tok := func(id, raw string) *auth.Token {
		return &auth.Token{ID: id, ShopID: "shop_1", Hash: domain.HashToken(raw), Scopes: []domain.Scope{"*"}, ShopPlan: domain.PlanAgency}
	}
	reads := &waits{}
	a := auth.New(auth.Config{Tokens: tokens{domain.HashToken(raw): tok("tok_1", raw), domain.HashToken(other): tok("tok_2", other)},
		WaitReads: reads.wait})
	pos := "0"
	h := a.Require("", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if pos != "0" {
			w.Header().Set(httpapi.HeaderEventPosition, pos)
		}
		w.WriteHeader(200)
	}))
	if c := call(h, raw); c != 200 || len(reads.calls()) != 0 {
		t.Fatalf("first request: %d, waits %v, want none", c, reads.calls())
	}
	pos = "42"
	call(h, raw) // a write reaching 42
	pos = "7"
	call(h, raw) // an older position does not lower it
	pos = "0"
	call(h, other)
	if got := reads.calls(); len(got) != 1 || got[0] != 42 {
		t.Fatalf("waits %v, want one for 42 (the write at 7 waited for 42; the other token waits for nothing)", got)
	}
	call(h, raw)
	if got := reads.calls(); len(got) != 2 || got[1] != 42 || a.LastWrite("tok_1") != 42 || a.LastWrite("tok_2") != 0 {
		t.Fatalf("waits %v, last writes %d %d", got, a.LastWrite("tok_1"), a.LastWrite("tok_2"))
	}
}

func TestUnknownTokenLooksUpAgainOnlyWhileBehind(t *testing.T) {
	raw, _ := domain.NewAdminToken("live")
	dir := tokens{}
	var mu sync.Mutex
	reached := uint64(10)
	creds := &waits{do: func(pos uint64) {
		// The read model catches up: the token is folded.
		mu.Lock()
		reached = pos
		mu.Unlock()
		dir[domain.HashToken(raw)] = &auth.Token{ID: "tok_1", ShopID: "shop_1", Hash: domain.HashToken(raw),
			Scopes: []domain.Scope{"*"}, ShopPlan: domain.PlanAgency}
	}}
	a := auth.New(auth.Config{Tokens: dir, WaitFor: creds.wait,
		Head: func(context.Context) (uint64, error) { return 12, nil },
		Reached: func() uint64 {
			mu.Lock()
			defer mu.Unlock()
			return reached
		}})
	h := a.Require("", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	if c := call(h, raw); c != 204 {
		t.Fatalf("token issued an instant ago: %d", c)
	}
	if got := creds.calls(); len(got) != 1 || got[0] != 12 {
		t.Fatalf("credential waits %v, want one for the head 12", got)
	}
	// Not behind: an unknown token is refused without waiting (after a
	// second lookup, which finds nothing either).
	unknown, _ := domain.NewAdminToken("live")
	if c := call(h, unknown); c != 401 || len(creds.calls()) != 1 {
		t.Fatalf("unknown token with the read model at the head: %d, waits %v", c, creds.calls())
	}
}

func TestWaitForPositionHonouredOnlyAfterAuthentication(t *testing.T) {
	raw, _ := domain.NewAdminToken("live")
	creds := &waits{}
	a := auth.New(auth.Config{Tokens: tokens{domain.HashToken(raw): {ID: "tok_1", ShopID: "shop_1", Hash: domain.HashToken(raw),
		Scopes: []domain.Scope{"customers:read"}, ShopPlan: domain.PlanAgency}}, WaitFor: creds.wait})
	h := a.Require("customers:read", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	bad, _ := domain.NewAdminToken("live")
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {bad, 401}} {
		if got := call(h, c.token, httpapi.HeaderWaitForPosition, "900"); got != c.want || len(creds.calls()) != 0 {
			t.Fatalf("token %q: %d, waits %v, want %d without waiting", c.token, got, creds.calls(), c.want)
		}
	}
	if got := call(h, raw, httpapi.HeaderWaitForPosition, "900"); got != 204 || len(creds.calls()) != 1 || creds.calls()[0] != 900 {
		t.Fatalf("authenticated: %d, waits %v", got, creds.calls())
	}
}

// foldsOnMiss is a token directory whose token is folded right after the
// first lookup missed it: the read model catches up between the miss and
// the moment the authenticator reads the position it reached.
type foldsOnMiss struct {
	mu     sync.Mutex
	tok    *auth.Token
	misses int
}

func (f *foldsOnMiss) TokenByHash(context.Context, string) (*auth.Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.misses == 0 {
		f.misses++
		return nil, domain.NotFound("token")
	}
	return f.tok, nil
}

// TestTokenFoldedBetweenMissAndCatchUp: the lookup misses a token issued
// an instant ago, and by the time the authenticator asks how far the
// credentials read model got, it has folded the token and reached the
// head. The token must still be accepted (it once was answered 401 under
// load: nothing looked it up again).
func TestTokenFoldedBetweenMissAndCatchUp(t *testing.T) {
	raw, _ := domain.NewAdminToken("live")
	dir := &foldsOnMiss{tok: &auth.Token{ID: "tok_1", ShopID: "shop_1", Hash: domain.HashToken(raw),
		Scopes: []domain.Scope{"*"}, ShopPlan: domain.PlanAgency}}
	creds := &waits{}
	a := auth.New(auth.Config{Tokens: dir, WaitFor: creds.wait,
		Head:    func(context.Context) (uint64, error) { return 12, nil },
		Reached: func() uint64 { return 12 }})
	h := a.Require("", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	if c := call(h, raw); c != 204 {
		t.Fatalf("token folded between the miss and the catch-up: %d, want 204", c)
	}
	if got := creds.calls(); len(got) != 0 {
		t.Fatalf("waited %v with the read model at the head", got)
	}
}
