package limits

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// Limiter limits the rate of requests per key (the admin API uses the token
// id). It is a generic cell-rate algorithm (GCRA), which is a token bucket
// kept as one timestamp per key: a fresh key may make Burst requests at
// once, then one more every Period/Rate.
//
// Allow counts one request against key under limit and says whether it is
// allowed; a refused request is not counted. The limit may differ from call
// to call for the same key (a plan change): the stored state is read under
// the limit of the call. Allow is safe for concurrent use, also from
// several servers sharing one store (Redis): concurrent calls never allow
// more requests than the limit does. It returns ErrInvalidLimit (wrapped)
// when limit does not validate, and an error whose domain code is
// unavailable when the store cannot answer; a store that does network I/O
// honours ctx. Whether to refuse or admit a request when the store is
// unavailable is the caller's choice.
type Limiter interface {
	Allow(ctx context.Context, key string, limit Limit) (Decision, error)
}

// Limit is a request rate: Rate requests per Period, with bursts of up to
// Burst requests at once. The zero Period means a minute and the zero Burst
// means Rate (the whole minute's allowance may be used at once, as the
// X-RateLimit-Limit header announces).
type Limit struct {
	// Rate is the number of requests per Period, at least 1.
	Rate int
	// Period is the length of the period Rate counts in; 0 means a minute.
	Period time.Duration
	// Burst is the most requests allowed at once; 0 means Rate.
	Burst int
}

// PerMinute returns a limit of n requests per minute, all of which may be
// used at once.
func PerMinute(n int) Limit { return Limit{Rate: n, Period: time.Minute} }

// ErrInvalidLimit is returned (wrapped) for a Limit that does not validate.
var ErrInvalidLimit = errors.New("invalid rate limit")

// Normalize returns l with its defaults filled in, or an error wrapping
// ErrInvalidLimit. Two limits that normalize to the same value behave the
// same.
func (l Limit) Normalize() (Limit, error) {
	if l.Period == 0 {
		l.Period = time.Minute
	}
	if l.Burst == 0 {
		l.Burst = l.Rate
	}
	switch {
	case l.Rate < 1:
		return l, fmt.Errorf("%w: rate %d is not positive", ErrInvalidLimit, l.Rate)
	case l.Period < 0:
		return l, fmt.Errorf("%w: period %v is negative", ErrInvalidLimit, l.Period)
	case l.Period/time.Duration(l.Rate) < time.Microsecond:
		return l, fmt.Errorf("%w: %d per %v is faster than one per microsecond", ErrInvalidLimit, l.Rate, l.Period)
	case l.Burst < 1:
		return l, fmt.Errorf("%w: burst %d is not positive", ErrInvalidLimit, l.Burst)
	}
	return l, nil
}

// Decision is a Limiter's answer, with what the rate-limit headers need.
type Decision struct {
	// Allowed says whether the request may proceed (and was counted).
	Allowed bool
	// Limit is the most requests the key may make at once from a rested
	// state (the limit's Burst): X-RateLimit-Limit.
	Limit int
	// Remaining is how many more requests the key may make at once now,
	// between 0 and Limit: X-RateLimit-Remaining.
	Remaining int
	// Reset is when the key is back at Limit remaining if it makes no more
	// requests: X-RateLimit-Reset (see ResetUnix).
	Reset time.Time
	// RetryAfter is, for a refused request, how long until one request
	// will be allowed (Retry-After, in seconds rounded up); 0 when allowed.
	RetryAfter time.Duration
}

// ResetUnix returns Reset as epoch seconds rounded up, the value of
// X-RateLimit-Reset: a client waiting until then is never early.
func (d Decision) ResetUnix() int64 {
	s := d.Reset.Unix()
	if d.Reset.Nanosecond() > 0 {
		s++
	}
	return s
}

// PlanLimits maps a plan to the rate limit of each of its tokens.
type PlanLimits map[domain.Plan]Limit

// Default rate limits per token (DESIGN.md §7). Plans without admin API
// access have none.
const (
	DefaultAgencyPerMinute     = 600
	DefaultEnterprisePerMinute = 3000
)

// DefaultPlanLimits returns the default limits: agency 600 requests per
// minute per token, enterprise 3000.
func DefaultPlanLimits() PlanLimits {
	return PlanLimits{
		domain.PlanAgency:     PerMinute(DefaultAgencyPerMinute),
		domain.PlanEnterprise: PerMinute(DefaultEnterprisePerMinute),
	}
}

// For returns the limit of plan, and false when the plan has none.
func (p PlanLimits) For(plan domain.Plan) (Limit, bool) {
	l, ok := p[plan]
	return l, ok
}

// Validate reports every limit that does not validate.
func (p PlanLimits) Validate() error {
	plans := make([]domain.Plan, 0, len(p))
	for plan := range p {
		plans = append(plans, plan)
	}
	slices.Sort(plans)
	var errs []error
	for _, plan := range plans {
		if _, err := p[plan].Normalize(); err != nil {
			errs = append(errs, fmt.Errorf("plan %s: %w", plan, err))
		}
	}
	return errors.Join(errs...)
}

// Unavailable wraps a store failure as a domain error with code
// unavailable, so that the HTTP edge answers 503 with Retry-After. Adapters
// use it; the message is safe to show and names no key.
func Unavailable(what string, err error) error {
	return &domain.Error{Code: domain.CodeUnavailable, Message: what + " unavailable", Err: err}
}
