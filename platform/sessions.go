package platform

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/platformapi"
)

// RefreshAhead is how long before its expiry an access token is
// refreshed: a call never starts with a token about to lapse mid-flight.
const RefreshAhead = 5 * time.Minute

// Session is what a call to the platform needs.
type Session struct {
	ShopID, Domain string
	AccessToken    string
	// Scopes is the token's grant (collapsed as the platform stores it).
	Scopes []string
}

// Sessions hands out the shops' platform sessions, refreshing expiring
// tokens ahead of their expiry. The session is read from the log (the
// shop's session stream), so every server sees the last refresh of any
// other; a refresh is recorded with the stream's expected revision, so two
// servers refreshing at once record one session (the loser reads the
// winner's).
type Sessions struct {
	Client   *platformapi.Client
	Commands *commands.Handler
	// Domain returns a shop's domain.
	Domain func(ctx context.Context, shopID string) (string, error)
	Now    func() time.Time

	mu    sync.Mutex
	shops map[string]*sync.Mutex
}

// lock serialises the refreshes of one shop within this server.
func (s *Sessions) lock(shop string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shops == nil {
		s.shops = map[string]*sync.Mutex{}
	}
	m, ok := s.shops[shop]
	if !ok {
		m = &sync.Mutex{}
		s.shops[shop] = m
	}
	return m
}

// ErrNoSession: the shop has no session (never installed through the
// platform's OAuth flow).
var ErrNoSession = errors.New("no platform session")

// ErrSessionRefused: the platform refused the stored session's refresh
// token (revoked, expired): the merchant must authorise the app again.
var ErrSessionRefused = errors.New("the platform refused the stored session")

// Session returns shop's session with an access token valid for at least
// RefreshAhead, refreshing it first when needed.
func (s *Sessions) Session(ctx context.Context, shop string) (Session, error) {
	m := s.lock(shop)
	m.Lock()
	defer m.Unlock()
	d, err := s.Domain(ctx, shop)
	if err != nil {
		return Session{}, err
	}
	for attempt := 0; ; attempt++ {
		cur, rev, err := s.Commands.LoadPlatformSession(ctx, shop)
		if domain.ErrorCode(err) == domain.CodeNotFound {
			return Session{}, ErrNoSession
		}
		if err != nil {
			return Session{}, err
		}
		now := s.Now()
		if cur.ExpiresAt.IsZero() || now.Add(RefreshAhead).Before(cur.ExpiresAt) || cur.RefreshToken == "" {
			return Session{ShopID: shop, Domain: d, AccessToken: cur.AccessToken, Scopes: cur.Scopes}, nil
		}
		t, err := s.Client.Refresh(ctx, d, cur.RefreshToken)
		var pe *platformapi.Error
		if errors.As(err, &pe) && (pe.Status == http.StatusBadRequest || pe.Status == http.StatusUnauthorized) {
			return Session{}, fmt.Errorf("%w: %w", ErrSessionRefused, err)
		}
		if err != nil {
			return Session{}, fmt.Errorf("refresh the platform session: %w", err)
		}
		scopes := t.Scopes
		if len(scopes) == 0 {
			scopes = cur.Scopes
		}
		_, err = s.Commands.StorePlatformSession(ctx, commands.StorePlatformSession{Expected: &rev, Session: domain.PlatformSessionStored{
			ShopID: shop, AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, Scopes: scopes,
			ExpiresAt: t.ExpiresAt, RefreshExpiresAt: t.RefreshExpiresAt, Source: domain.SessionFromRefresh,
		}}, commands.Meta{Actor: "system:platform_sessions", Source: "system"})
		if errors.Is(err, commands.ErrSessionChanged) && attempt < 2 {
			continue // another server refreshed first: use its session
		}
		if err != nil {
			return Session{}, err
		}
		return Session{ShopID: shop, Domain: d, AccessToken: t.AccessToken, Scopes: scopes}, nil
	}
}
