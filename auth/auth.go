package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/limits"
)

// Principal is an authenticated admin-token caller.
type Principal struct {
	TokenID   string
	ShopID    string // "" for a master token
	AccountID string // set for a master token
	Master    bool
	Scopes    []domain.Scope
	Plan      domain.Plan
	// Session is set for a merchant user signed in to the admin interface
	// (TokenID is then "user:<id>"): the interface acts through the API
	// with it (see WithSession). Such a caller has no plan gate, rate
	// limit or token usage: those belong to API credentials.
	Session bool
}

// Token is what Finder returns for a token hash.
type Token struct {
	ID        string
	ShopID    string
	AccountID string
	Master    bool
	Hash      string // hex SHA-256 of the raw token
	Scopes    []domain.Scope
	Revoked   bool
	ShopPlan  domain.Plan
}

// Finder looks a token up by the hex SHA-256 of its raw value. It returns an
// error with domain code not_found for an unknown hash.
type Finder interface {
	TokenByHash(ctx context.Context, hash string) (*Token, error)
}

// Config configures an Authenticator.
type Config struct {
	Tokens Finder
	// Guard counts failed authentications per client address (nil: none).
	Guard limits.Guard
	// Limits limits requests per token (nil: none), at the plan's limit in
	// Plans; a plan absent there gets Default.
	Limits  limits.Limiter
	Plans   limits.PlanLimits
	Default limits.Limit
	// WaitFor waits (until ctx ends) until the credentials read model
	// reached pos. An authenticated request that sends
	// X-Wait-For-Position waits for it (bounded by httpapi.MaxWait), and
	// so does a request with an unknown credential while that read model
	// is behind the log's head (see Head).
	WaitFor func(ctx context.Context, pos uint64) error
	// WaitReads waits (until ctx ends) until every read model that serves
	// reads reached pos: an authenticated request waits for the position
	// of its credential's last write on this server (read-your-writes).
	// Nil: no such wait.
	WaitReads func(ctx context.Context, pos uint64) error
	// Head returns the position of the newest event of the log, and
	// Reached the position the credentials read model reached. With
	// both, a credential unknown on lookup is looked up once more after
	// the read model reached the head (waiting, bounded by
	// httpapi.MaxWait, only while it is behind), so a token works on its
	// very first request. Nil: an unknown credential is refused at once.
	Head    func(ctx context.Context) (uint64, error)
	Reached func() uint64
	// OnAlert is called once when an address crosses the alert threshold
	// (1000 attempts in 24 hours, refused ones included). It must not block.
	OnAlert func(ip netip.Addr)
	// Now is the clock of last-used times. Default time.Now.
	Now func() time.Time
}

type principalKey struct{}

// FromContext returns the authenticated principal of a request.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

type sessionKey struct{}

// WithSession returns ctx carrying a principal the admin interface
// authenticated from its own sign-in session (p.Session is set here).
// A request whose context carries one is authenticated as it, without a
// bearer token: only the process itself can build such a context (the
// admin interface calls the API's handlers in-process), never a header
// or a body.
func WithSession(ctx context.Context, p Principal) context.Context {
	p.Session = true
	return context.WithValue(ctx, sessionKey{}, p)
}

// Authenticator checks bearer tokens, plans, scopes, rate limits and
// brute-force counters. It keeps a cache of tokens in front of the Finder,
// dropped whole by Invalidate (the tenancy projection calls it after every
// change) and never filled with a lookup that overlapped an Invalidate.
type Authenticator struct {
	cfg      Config
	LastUsed *LastUsed

	mu      sync.RWMutex
	gen     uint64
	cache   map[string]*Token
	revoked map[string]time.Time // hashes revoked here, until the read model agrees

	writes writes // each credential's last write position on this server
}

// maxCache bounds the token cache.
const maxCache = 100_000

// New returns an authenticator.
func New(cfg Config) *Authenticator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Default.Rate == 0 {
		cfg.Default = limits.PerMinute(limits.DefaultAgencyPerMinute)
	}
	return &Authenticator{cfg: cfg, LastUsed: NewLastUsed(), cache: map[string]*Token{}, revoked: map[string]time.Time{}}
}

// Invalidate drops every cached token.
func (a *Authenticator) Invalidate() {
	a.mu.Lock()
	a.gen++
	a.cache = map[string]*Token{}
	now := a.cfg.Now()
	for h, until := range a.revoked {
		if now.After(until) {
			delete(a.revoked, h)
		}
	}
	a.mu.Unlock()
}

// Revoke makes a credential hash (an admin token's or a public key's)
// fail at once in this process, before the read model reflects the
// rotation or revocation that was just committed.
func (a *Authenticator) Revoke(hash string) {
	a.mu.Lock()
	a.revoked[hash] = a.cfg.Now().Add(10 * time.Minute)
	delete(a.cache, hash)
	a.gen++
	a.mu.Unlock()
}

// revokedHere reports whether hash was revoked in this process (Revoke)
// and the read model may not reflect it yet.
func (a *Authenticator) revokedHere(hash string) bool {
	a.mu.RLock()
	_, revoked := a.revoked[hash]
	a.mu.RUnlock()
	return revoked
}

func (a *Authenticator) lookup(ctx context.Context, hash string) (*Token, error) {
	a.mu.RLock()
	t, hit := a.cache[hash]
	_, revoked := a.revoked[hash]
	gen := a.gen
	a.mu.RUnlock()
	if revoked {
		return nil, httpapi.InvalidToken()
	}
	if hit {
		return t, nil
	}
	t, err := a.cfg.Tokens.TokenByHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.gen == gen && len(a.cache) < maxCache {
		a.cache[hash] = t
	}
	a.mu.Unlock()
	return t, nil
}

// bearer extracts the raw bearer token: "" and false when the header is
// missing, "" and true when it is present but not a bearer credential.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	scheme, raw, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", true
	}
	return strings.TrimSpace(raw), true
}

// guardCheck refuses a blocked address before any credential is looked at.
func (a *Authenticator) guardCheck(r *http.Request) (limits.Verdict, error) {
	if a.cfg.Guard == nil {
		return limits.Verdict{Allowed: true}, nil
	}
	ip := httpapi.ClientIP(r)
	v, err := a.cfg.Guard.Check(r.Context(), ip)
	if err != nil {
		return v, err
	}
	// Refused checks count towards the alert too: during a flood the
	// 1000th attempt usually arrives here.
	if v.Alert && a.cfg.OnAlert != nil {
		a.cfg.OnAlert(ip)
	}
	if !v.Allowed {
		return v, refusal(v)
	}
	return v, nil
}

func refusal(v limits.Verdict) error {
	if v.Code == httpapi.CodeIPBlocked {
		return httpapi.IPBlocked(v.RetryAfter)
	}
	return httpapi.TooManyFailedAttempts(v.RetryAfter)
}

// failed records a failed authentication and returns the error to answer.
func (a *Authenticator) failed(r *http.Request, answer error) error {
	if a.cfg.Guard == nil {
		return answer
	}
	ip := httpapi.ClientIP(r)
	v, err := a.cfg.Guard.Fail(r.Context(), ip)
	if err != nil {
		return err
	}
	if v.Alert && a.cfg.OnAlert != nil {
		a.cfg.OnAlert(ip)
	}
	if !v.Allowed {
		return refusal(v) // this failure crossed a threshold
	}
	return answer
}

// succeeded resets the address's counters when it has failures on record.
func (a *Authenticator) succeeded(r *http.Request, v limits.Verdict) error {
	if a.cfg.Guard == nil || !v.Failures {
		return nil
	}
	return a.cfg.Guard.Succeed(r.Context(), httpapi.ClientIP(r))
}

// Authenticate resolves the request's bearer token, with the brute-force
// guard around it.
//
// Only a successful admin-token authentication resets the address's
// brute-force counters: public keys are embedded in storefront pages and
// image-API keys are a separate, narrower credential, so neither may wipe
// the record of failed admin-token guesses. A token unknown on lookup
// while the credentials read model is behind the log's head is looked up
// again once it caught up (see Config.Head). X-Wait-For-Position is not
// honoured here: Require and RequireMaster honour it once the request is
// authenticated.
func (a *Authenticator) Authenticate(r *http.Request) (Principal, error) {
	if p, ok := r.Context().Value(sessionKey{}).(Principal); ok {
		return p, nil
	}
	v, err := a.guardCheck(r)
	if err != nil {
		return Principal{}, err
	}
	raw, present := bearer(r)
	if !present {
		return Principal{}, httpapi.AuthenticationRequired()
	}
	if raw == "" { // a credential without the Bearer scheme
		return Principal{}, a.failed(r, httpapi.BearerSchemeMissing())
	}
	if _, ok := domain.ParseAdminToken(raw); !ok {
		return Principal{}, a.failed(r, httpapi.InvalidToken())
	}
	hash := domain.HashToken(raw)
	tok, err := FindFresh(r.Context(), a, func() (*Token, error) { return a.lookup(r.Context(), hash) })
	if domain.ErrorCode(err) == domain.CodeNotFound || isInvalidToken(err) {
		return Principal{}, a.failed(r, httpapi.InvalidToken())
	}
	if err != nil {
		return Principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(tok.Hash), []byte(hash)) != 1 || tok.Revoked {
		return Principal{}, a.failed(r, httpapi.InvalidToken())
	}
	if err := a.succeeded(r, v); err != nil {
		return Principal{}, err
	}
	a.LastUsed.Record(tok.ID, a.cfg.Now(), httpapi.ClientIP(r))
	return Principal{TokenID: tok.ID, ShopID: tok.ShopID, AccountID: tok.AccountID, Master: tok.Master,
		Scopes: tok.Scopes, Plan: tok.ShopPlan}, nil
}

func isInvalidToken(err error) bool {
	var he *httpapi.Error
	return errors.As(err, &he) && he.Code == httpapi.CodeInvalidToken
}

// Require wraps next so that it runs only for a shop token whose plan has
// API access and whose scopes grant scope ("" means any scope), within the
// token's rate limit. Every authenticated answer carries the rate-limit
// headers. An admitted request first waits (bounded) for its
// X-Wait-For-Position and for its token's last write (read-your-writes);
// the position of a write next answers is remembered as the token's.
func (a *Authenticator) Require(scope domain.Scope, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.Authenticate(r)
		if err == nil {
			err = a.admit(w, r, p, scope)
		}
		if err == nil {
			err = a.settle(r, p.TokenID)
		}
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		next.ServeHTTP(a.recordWrites(w, p.TokenID), r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// RequireMaster wraps next so that it runs only for a master token, or, when
// allowShop is true, for any valid token (the handler then decides).
func (a *Authenticator) RequireMaster(allowShop bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.Authenticate(r)
		if err == nil {
			switch {
			case p.Master:
				err = a.limit(w, r, p)
			case !allowShop:
				err = httpapi.ScopeRequired("master token")
			default:
				err = a.admit(w, r, p, "")
			}
		}
		if err == nil {
			err = a.settle(r, p.TokenID)
		}
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		next.ServeHTTP(a.recordWrites(w, p.TokenID), r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// admit checks a shop token's plan, its rate limit, then its scope. Every
// answer to a token whose plan has the admin API carries the rate-limit
// headers, a 403 for a missing scope included (that request was
// authenticated and used the token's budget); a plan without the admin API
// has no rate limit to show. Only an admitted request is counted in the
// token's usage (LastUsed.Count).
func (a *Authenticator) admit(w http.ResponseWriter, r *http.Request, p Principal, scope domain.Scope) error {
	if p.Master {
		// A master token manages keys; it reads no shop's data.
		if scope == "" {
			return a.limit(w, r, p)
		}
		return httpapi.ScopeRequired(string(scope))
	}
	if p.Session {
		if scope != "" && !domain.Grants(p.Scopes, scope) {
			return httpapi.ScopeRequired(string(scope))
		}
		return nil
	}
	if !p.Plan.HasAPIAccess() {
		return httpapi.PlanRequired(string(domain.PlanAgency), string(domain.PlanEnterprise))
	}
	if err := a.throttle(w, r, p); err != nil {
		return err
	}
	if scope != "" && !domain.Grants(p.Scopes, scope) {
		return httpapi.ScopeRequired(string(scope))
	}
	a.LastUsed.Count(p.ShopID, p.TokenID, a.cfg.Now())
	return nil
}

// limit applies the token's rate limit and, when it admits the request,
// counts it in the token's usage: a request refused for its plan, its
// scope or the rate limit (403, 429) is not counted.
func (a *Authenticator) limit(w http.ResponseWriter, r *http.Request, p Principal) error {
	if p.Session {
		return nil
	}
	if err := a.throttle(w, r, p); err != nil {
		return err
	}
	a.LastUsed.Count(p.ShopID, p.TokenID, a.cfg.Now())
	return nil
}

// throttle applies the token's rate limit and sets the rate-limit headers;
// it returns the 429 when the limit is reached.
func (a *Authenticator) throttle(w http.ResponseWriter, r *http.Request, p Principal) error {
	if a.cfg.Limits == nil {
		return nil
	}
	lim := a.planLimit(p.Plan)
	d, err := a.cfg.Limits.Allow(r.Context(), "tok:"+p.TokenID, lim)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(d.Remaining, 0)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(d.ResetUnix(), 10))
	if !d.Allowed {
		return httpapi.RateLimited(d.RetryAfter)
	}
	return nil
}

func (a *Authenticator) planLimit(plan domain.Plan) limits.Limit {
	if l, ok := a.cfg.Plans.For(plan); ok {
		return l
	}
	return a.cfg.Default
}

// PlanLimit returns the rate limit each token of a shop on plan gets, and
// false when none applies: no limiter is configured, or the plan has no
// admin API access (its tokens are refused before any limit).
func (a *Authenticator) PlanLimit(plan domain.Plan) (limits.Limit, bool) {
	if a.cfg.Limits == nil || !plan.HasAPIAccess() {
		return limits.Limit{}, false
	}
	return a.planLimit(plan), true
}

// CheckAttempt returns the 429 to answer when the client's address may not
// try to authenticate now, else nil: the guard's check, for the receivers
// that admit a caller by a shared token (ingest.Guard).
func (a *Authenticator) CheckAttempt(r *http.Request) error {
	_, err := a.guardCheck(r)
	return err
}

// FailAttempt records a failed authentication of the client's address
// and returns the error to answer: answer, or the 429 when the failure was
// refused (ingest.Guard).
func (a *Authenticator) FailAttempt(r *http.Request, answer error) error {
	return a.failed(r, answer)
}
