package writeapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/netip"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/limits"
	"github.com/cgp-platform/cgp/projections/reviews"
	"github.com/cgp-platform/cgp/readapi"
)

// Default limits of the helpfulness votes (counted before anything else,
// on their own counters: votes do not use up an address's review
// submissions): an address may vote 20 times at once and 60 an hour, a
// shop's storefront 300 at once and 3000 an hour.
var (
	DefaultReviewVoteAddressLimit = limits.Limit{Rate: 60, Period: time.Hour, Burst: 20}
	DefaultReviewVoteShopLimit    = limits.Limit{Rate: 3000, Period: time.Hour, Burst: 300}
)

// ReviewVotesConfig configures the helpfulness votes.
type ReviewVotesConfig struct {
	Commands *commands.Handler
	Auth     *auth.Authenticator
	Shops    auth.PublicShops
	// Reviews reads the review's count back after the vote.
	Reviews *reviews.Queries
	Wait    readapi.Waiter
	// Limiter counts the votes per address and per shop; AddressKey keys
	// the address counters (the submissions' key: no address in clear).
	Limiter                 limits.Limiter
	AddressKey              []byte
	AddressLimit, ShopLimit limits.Limit
	// VoterKey keys the voter hash recorded with a vote (its own key, so
	// a vote's hash cannot be matched with the limiter's counters).
	VoterKey []byte
}

// ReviewVotes serves POST /api/public/reviews/{id}/helpful ("Was this
// review helpful?") and its CORS preflight.
type ReviewVotes struct{ cfg ReviewVotesConfig }

// NewReviewVotes returns the helpfulness votes' handler; zero limits take
// the defaults.
func NewReviewVotes(cfg ReviewVotesConfig) *ReviewVotes {
	if cfg.AddressLimit.Rate == 0 {
		cfg.AddressLimit = DefaultReviewVoteAddressLimit
	}
	if cfg.ShopLimit.Rate == 0 {
		cfg.ShopLimit = DefaultReviewVoteShopLimit
	}
	return &ReviewVotes{cfg: cfg}
}

// Routes registers the vote and its preflight (beta).
func (v *ReviewVotes) Routes(r *mux.Router) {
	const path = "/api/public/reviews/{id}/helpful"
	r.Handle(path, httpapi.Beta(v.cfg.Auth.Public(v.cfg.Shops, http.HandlerFunc(v.handleHelpful)))).Methods(http.MethodPost)
	r.Handle(path, httpapi.Beta(v.cfg.Auth.Preflight(v.cfg.Shops, "POST"))).Methods(http.MethodOptions)
}

// helpfulAttributes are a vote's answer: the review's count with it.
type helpfulAttributes struct {
	HelpfulCount int `json:"helpful_count"`
}

// handleHelpful records the vote (a repeat from the same address records
// nothing) and answers 200 with the review's helpful_count including it.
// The body, if any, is not read.
func (v *ReviewVotes) handleHelpful(w http.ResponseWriter, r *http.Request) {
	shop, _ := auth.PublicShopFromContext(r.Context())
	addr := httpapi.ClientIP(r)
	if err := throttle(r, v.cfg.Limiter, v.cfg.AddressKey, addr, "review_vote", shop, v.cfg.AddressLimit, v.cfg.ShopLimit); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	id := mux.Vars(r)["id"]
	if !domain.HasPrefixID(id, domain.PrefixReview) {
		httpapi.WriteError(w, r, domain.NotFound("review"))
		return
	}
	res, err := v.cfg.Commands.MarkReviewHelpful(r.Context(), commands.MarkReviewHelpful{ShopID: shop, ReviewID: id,
		Voter: VoterHash(v.cfg.VoterKey, shop, id, addr)}, commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: "storefront", Source: "api"})
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	// A repeat waits for the first vote's position: the same answer.
	readapi.ServeWritten(w, r, v.cfg.Wait, reviews.Name, res.Position, http.StatusOK, func(ctx context.Context) (*reviews.Review, error) {
		return v.cfg.Reviews.Review(ctx, shop, id)
	}, func(rv *reviews.Review) { rv.HelpfulCount++ }, func(rv *reviews.Review) httpapi.Resource {
		return httpapi.Resource{ID: rv.ID, Type: "review_helpfulness", Attributes: helpfulAttributes{HelpfulCount: rv.HelpfulCount}}
	})
}

// VoterHash is the voter recorded with a helpfulness vote: the HMAC-SHA256
// under key of the shop, the review and the voter's address (an IPv6
// address by its /64 prefix, what one subscriber line gets), 128 bits in
// hex. It names one address's vote on one review and nothing else: no
// address is stored, and the same address's votes on two reviews have
// unrelated hashes.
func VoterHash(key []byte, shop, review string, addr netip.Addr) string {
	if addr.Is6() {
		if p, err := addr.Prefix(64); err == nil {
			addr = p.Addr()
		}
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(shop + "\x00" + review + "\x00" + addr.String()))
	return hex.EncodeToString(mac.Sum(nil)[:16])
}

// throttle counts a request of addr against its address's limit, then the
// shop's, on counters named after kind (an address over its limit does
// not use the shop's); the address counter is keyed by an HMAC of the
// address under key.
func throttle(r *http.Request, limiter limits.Limiter, key []byte, addr netip.Addr, kind, shop string, addrLimit, shopLimit limits.Limit) error {
	if limiter == nil {
		return nil
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(addr.String()))
	for _, c := range []struct {
		key string
		lim limits.Limit
	}{{kind + "_addr:" + hex.EncodeToString(mac.Sum(nil)[:16]), addrLimit}, {kind + "_shop:" + shop, shopLimit}} {
		d, err := limiter.Allow(r.Context(), c.key, c.lim)
		if err != nil {
			return err
		}
		if !d.Allowed {
			return httpapi.RateLimited(d.RetryAfter)
		}
	}
	return nil
}
