package platform

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/platformapi"
)

// StateTTL is how long an install's state nonce is valid: the merchant
// has this long on the platform's consent screen.
const StateTTL = 10 * time.Minute

// StateCookie carries the state nonce to the callback in the merchant's
// browser, so that a callback with a state issued to someone else's
// browser (login CSRF) is refused.
const StateCookie = "cgp_oauth_state"

// stateScope is the idempotency store's scope of the consumed nonces.
const stateScope = "oauth-state"

// Installer serves the install flow: GET /auth/install redirects the
// merchant to the platform's consent screen; GET /auth/callback verifies
// the platform's redirect, exchanges the code for the offline token and
// records the install.
type Installer struct {
	Client   *platformapi.Client // nil: the flow answers 404
	Commands *commands.Handler
	// States remembers the consumed state nonces (single use), shared by
	// the servers like the Idempotency-Key records.
	States idempotency.Store
	// StateKey signs the state nonces (derived from the master key).
	StateKey []byte
	// Declared are the scopes requested.
	Declared []string
	// PublicBase is the service's public address: the callback is
	// PublicBase/auth/callback, the merchant lands on PublicBase/admin.
	PublicBase string
	// WebhookSecret is what the platform signs webhooks with (the client
	// secret); Plan is a new shop's plan.
	WebhookSecret, Plan string
	// Wait, when set, waits until the read models reached a position (the
	// merchant lands on the admin interface with the shop in it).
	Wait func(ctx context.Context, pos uint64) error
	Now  func() time.Time
}

// Routes registers the install flow.
func (in *Installer) Routes(r *mux.Router) {
	r.Handle("/auth/install", httpapi.Beta(http.HandlerFunc(in.handleInstall))).Methods(http.MethodGet)
	r.Handle("/auth/callback", httpapi.Beta(http.HandlerFunc(in.handleCallback))).Methods(http.MethodGet)
}

func (in *Installer) notConfigured(w http.ResponseWriter, r *http.Request) bool {
	if in.Client != nil {
		return false
	}
	httpapi.WriteError(w, r, &httpapi.Error{Status: http.StatusNotFound, Code: httpapi.CodeNotFound,
		Message: "installing through the platform is not configured on this server (--platform-client-id)"})
	return true
}

// badRequest is the answer to a redirect that does not verify.
func badRequest(field, msg string) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusBadRequest, Code: httpapi.CodeInvalidParameter, Message: msg,
		Details: map[string]any{"field": field}}
}

// handleInstall starts the flow. A request carrying an hmac (the
// platform's own install link) must verify; one without (a
// re-authorisation link the service sent) only needs a valid shop.
func (in *Installer) handleInstall(w http.ResponseWriter, r *http.Request) {
	if in.notConfigured(w, r) {
		return
	}
	q := r.URL.Query()
	shop := q.Get("shop")
	if _, signed := q["hmac"]; signed {
		s, err := in.Client.VerifyRedirect(q)
		if err != nil {
			httpapi.WriteError(w, r, redirectError(err))
			return
		}
		shop = s
	} else if len(q["shop"]) != 1 || !in.Client.ValidShop(shop) {
		httpapi.WriteError(w, r, badRequest("shop", "shop must be the shop's platform domain, such as example.myshopify.com"))
		return
	}
	state, err := in.newState(shop)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	to, err := in.Client.AuthorizeURL(shop, in.Declared, in.PublicBase+"/auth/callback", state)
	if err != nil {
		httpapi.WriteError(w, r, badRequest("shop", "not a shop domain of the platform"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: StateCookie, Value: state, Path: "/auth/callback", MaxAge: int(StateTTL / time.Second),
		HttpOnly: true, Secure: isHTTPS(in.PublicBase), SameSite: http.SameSiteLaxMode})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to, http.StatusFound)
}

func isHTTPS(base string) bool {
	u, err := url.Parse(base)
	return err == nil && u.Scheme == "https"
}

func redirectError(err error) error {
	switch {
	case errors.Is(err, platformapi.ErrBadSignature):
		return &httpapi.Error{Status: http.StatusUnauthorized, Code: "invalid_signature",
			Message: "the request's hmac does not verify: it was not signed by the platform"}
	case errors.Is(err, platformapi.ErrStale):
		return badRequest("timestamp", "the request's timestamp is missing or too old")
	case errors.Is(err, platformapi.ErrBadShop):
		return badRequest("shop", "shop must be the shop's platform domain, such as example.myshopify.com")
	}
	return err
}

// newState is a signed, expiring nonce bound to shop:
// base64url(nonce[16] | expiry unix[8] | HMAC(key, shop|nonce|expiry)[16]).
// Issuing one writes nothing: an unauthenticated flood of install
// requests costs no storage.
func (in *Installer) newState(shop string) (string, error) {
	b := make([]byte, 16, 40)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	b = binary.BigEndian.AppendUint64(b, uint64(in.Now().Add(StateTTL).Unix()))
	b = append(b, in.stateMAC(shop, b)...)
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (in *Installer) stateMAC(shop string, nonceAndExpiry []byte) []byte {
	m := hmac.New(sha256.New, in.StateKey)
	m.Write([]byte(shop))
	m.Write([]byte{0})
	m.Write(nonceAndExpiry)
	return m.Sum(nil)[:16]
}

// checkState verifies a state for shop and returns its nonce (hex).
func (in *Installer) checkState(shop, state string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil || len(b) != 40 {
		return "", false
	}
	if !hmac.Equal(b[24:], in.stateMAC(shop, b[:24])) {
		return "", false
	}
	if in.Now().Unix() > int64(binary.BigEndian.Uint64(b[16:24])) {
		return "", false
	}
	return hex.EncodeToString(b[:16]), true
}

// handleCallback finishes the flow: the platform's signature, the state
// (issued by this service for this shop, to this browser, not expired,
// never used), then the code exchange and the install's events.
func (in *Installer) handleCallback(w http.ResponseWriter, r *http.Request) {
	if in.notConfigured(w, r) {
		return
	}
	q := r.URL.Query()
	shop, err := in.Client.VerifyRedirect(q)
	if err != nil {
		httpapi.WriteError(w, r, redirectError(err))
		return
	}
	state, code := q.Get("state"), q.Get("code")
	if code == "" || len(code) > 512 {
		httpapi.WriteError(w, r, badRequest("code", "the callback has no authorization code"))
		return
	}
	nonce, ok := in.checkState(shop, state)
	cookie, cerr := r.Cookie(StateCookie)
	if !ok || cerr != nil || subtle.ConstantTimeCompare([]byte(cookie.Value), []byte(state)) != 1 {
		httpapi.WriteError(w, r, badRequest("state", "the state was not issued to this browser for this shop, or it expired: start again at /auth/install"))
		return
	}
	claim, err := in.States.Begin(r.Context(), stateScope, nonce, "callback")
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if claim.Outcome != idempotency.Started {
		httpapi.WriteError(w, r, badRequest("state", "this state was used already: start again at /auth/install"))
		return
	}
	// Consumed for good before anything else: the platform's code is
	// single-use too, so a failed exchange is restarted from /auth/install.
	if err := in.States.Complete(r.Context(), claim, idempotency.Response{Status: http.StatusFound}); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: StateCookie, Value: "", Path: "/auth/callback", MaxAge: -1,
		HttpOnly: true, Secure: isHTTPS(in.PublicBase), SameSite: http.SameSiteLaxMode})
	tok, err := in.Client.ExchangeCode(r.Context(), shop, code)
	if err != nil {
		httpapi.WriteError(w, r, exchangeError(err))
		return
	}
	res, err := in.Commands.InstallApp(r.Context(), commands.InstallApp{Domain: shop, Granted: tok.Scopes, Declared: in.Declared,
		WebhookSecret: in.WebhookSecret, Plan: in.Plan, Nonce: nonce,
		Session: domain.PlatformSessionStored{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Scopes: tok.Scopes,
			ExpiresAt: tok.ExpiresAt, RefreshExpiresAt: tok.RefreshExpiresAt}},
		commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: "platform:" + shop, Source: "install"})
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if in.Wait != nil {
		_ = in.Wait(r.Context(), res.Position) // the landing page catches up on its own otherwise
	}
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, in.PublicBase+"/admin?"+url.Values{"shop": {shop}}.Encode(), http.StatusFound)
}

// exchangeError is the answer to a failed code exchange: the platform's
// refusal of the code (400: used, expired, not ours) is the merchant's to
// restart; the platform failing is ours to report.
func exchangeError(err error) error {
	var pe *platformapi.Error
	if errors.As(err, &pe) && pe.Status >= 400 && pe.Status < 500 && pe.Status != http.StatusTooManyRequests {
		return badRequest("code", "the platform refused the authorization code: start again at /auth/install")
	}
	return HTTPError(err, "")
}
