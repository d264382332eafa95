package attribution

import (
	"errors"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// Model is an attribution model: a rule that shares an order among its
// touchpoints.
type Model uint8

// Models. Touchpoints t1…tn are those of the lookback window, oldest first.
const (
	// FirstTouch credits t1 with everything.
	FirstTouch Model = iota
	// LastTouch credits tn with everything.
	LastTouch
	// LastNonDirect credits the last touchpoint whose channel is not direct,
	// or tn when every touchpoint is direct.
	LastNonDirect
	// Linear credits each touchpoint 1/n.
	Linear
	// TimeDecay credits each touchpoint in proportion to 2^(-Δt/half-life),
	// Δt its age at the order's time (half-life 7 days by default).
	TimeDecay
	// PositionBased credits t1 and tn 40% each and shares 20% equally among
	// the others; one touchpoint gets 100%, two get 50% each.
	PositionBased
)

// NumModels is the number of models; Credits are indexed by Model.
const NumModels = int(PositionBased) + 1

var modelNames = [NumModels]string{"first_touch", "last_touch", "last_non_direct", "linear", "time_decay", "position_based"}

// String returns the model's name as the API spells it ("time_decay").
func (m Model) String() string {
	if int(m) < NumModels {
		return modelNames[m]
	}
	return "unknown"
}

// ParseModel returns the model of a name, false for an unknown name.
func ParseModel(name string) (Model, bool) {
	for i, n := range modelNames {
		if n == name {
			return Model(i), true
		}
	}
	return 0, false
}

// Models returns every model, in index order.
func Models() []Model {
	return []Model{FirstTouch, LastTouch, LastNonDirect, Linear, TimeDecay, PositionBased}
}

// Defaults and bounds of Config.
const (
	DefaultLookback = 30 * 24 * time.Hour
	DefaultHalfLife = 7 * 24 * time.Hour
	MaxLookback     = 365 * 24 * time.Hour
)

// Config holds a shop's attribution settings. Zero fields take defaults.
type Config struct {
	// Lookback is how long before an order a touchpoint counts (default 30
	// days, at most 365): the window is [order time - Lookback, order time].
	Lookback time.Duration
	// HalfLife is the time-decay model's half-life (default 7 days).
	HalfLife time.Duration
	// SessionTimeout is the inactivity that ends a session (default 30
	// minutes), for callers that sessionise with the shop's settings.
	SessionTimeout time.Duration
}

// WithDefaults returns c with zero (or negative) fields set to defaults.
func (c Config) WithDefaults() Config {
	if c.Lookback <= 0 {
		c.Lookback = DefaultLookback
	}
	if c.HalfLife <= 0 {
		c.HalfLife = DefaultHalfLife
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	return c
}

// Validate reports every setting out of bounds at once (zero means the
// default and is valid): lookback 1 hour to 365 days, half-life 1 hour to
// 365 days, session timeout 1 minute to 24 hours.
func (c Config) Validate() error {
	var errs []error
	if c.Lookback != 0 && (c.Lookback < time.Hour || c.Lookback > MaxLookback) {
		errs = append(errs, domain.Invalid("lookback", "lookback must be between 1 hour and 365 days"))
	}
	if c.HalfLife != 0 && (c.HalfLife < time.Hour || c.HalfLife > MaxLookback) {
		errs = append(errs, domain.Invalid("half_life", "half_life must be between 1 hour and 365 days"))
	}
	if c.SessionTimeout != 0 && (c.SessionTimeout < time.Minute || c.SessionTimeout > 24*time.Hour) {
		errs = append(errs, domain.Invalid("session_timeout", "session_timeout must be between 1 minute and 24 hours"))
	}
	return errors.Join(errs...)
}

// Order is what attribution needs of an order.
type Order struct {
	ID string
	// At is the order's time (OrderRecorded's created_at): the end of the
	// lookback window, and the time decay's reference.
	At time.Time
	// Revenue is the order's total price.
	Revenue domain.Amount
	// Refunded is the sum of the order's refunds.
	Refunded domain.Amount
}

// NewOrder returns the order of a snapshot, without refunds.
func NewOrder(ev *domain.OrderRecorded) Order {
	return Order{ID: ev.OrderID, At: ev.CreatedAt.UTC(), Revenue: ev.TotalPrice}
}

// Credit is what a touchpoint earns of an order under one model.
type Credit struct {
	// Weight is the touchpoint's share of the order; a model's weights
	// sum to 1 (to float64 rounding; the exact shares are integers).
	Weight float64 `json:"weight"`
	// Revenue is the touchpoint's share of the order's revenue, Refunded
	// its share of the refunds; each sums exactly to the order's over the
	// touchpoints.
	Revenue  domain.Amount `json:"revenue"`
	Refunded domain.Amount `json:"refunded"`
}

// Net is the credited revenue after refunds.
func (c Credit) Net() domain.Amount { return c.Revenue - c.Refunded }

// Touch is a touchpoint of an order's window with its credits.
type Touch struct {
	Touchpoint Touchpoint `json:"touchpoint"`
	Class      Class      `json:"class"`
	// Synthetic marks the direct touch an order without any touchpoint in
	// its window is credited to (it has no ID and is at the order's time).
	Synthetic bool              `json:"synthetic,omitempty"`
	Credits   [NumModels]Credit `json:"credits"`
}

// Credit returns the touch's credit under model m.
func (t *Touch) Credit(m Model) Credit { return t.Credits[m] }

// Result is the attribution of one order.
type Result struct {
	Order Order
	// Touches are the touchpoints of the window, oldest first (ties in a
	// fixed order of their fields), each with its credit per model.
	Touches []Touch
}

// Attribute computes the credits of an order's touchpoints under every
// model. Touchpoints after the order or before its lookback window are
// ignored; callers pass one session landing per visit (see Sessionize and
// Landings) of the customer or visitor who ordered. An order without any
// touchpoint in the window is credited wholly to a synthetic direct touch.
//
// Money is split with integers: each touchpoint gets the whole part of its
// exact share (weight × amount, in ten-thousandths) and the units left go,
// one each, to the largest remainders (ties to the earlier touchpoint), so
// the credited revenue of a model sums exactly to the order's revenue, and
// the credited refunds to the refunds, split by the same weights. A negative
// revenue counts as 0 and refunds are capped at the revenue (net credited
// revenue is never below zero in sum). The result does not depend on the
// order of touchpoints.
func Attribute(cfg Config, order Order, touchpoints []Touchpoint) Result {
	cfg = cfg.WithDefaults()
	order.At = order.At.UTC()
	order.Revenue = max(order.Revenue, 0)
	order.Refunded = min(max(order.Refunded, 0), order.Revenue)
	from := order.At.Add(-cfg.Lookback)
	// Sort indices, not touchpoints: moving whole structs costs more than
	// the rest of the computation.
	in := make([]int, 0, len(touchpoints))
	for i := range touchpoints {
		if at := touchpoints[i].OccurredAt; !at.After(order.At) && !at.Before(from) {
			in = append(in, i)
		}
	}
	slices.SortFunc(in, func(a, b int) int { return compareTouchpoints(&touchpoints[a], &touchpoints[b]) })
	var touches []Touch
	if len(in) == 0 {
		touches = []Touch{{Touchpoint: Touchpoint{OccurredAt: order.At, Kind: KindOrderLanding}, Synthetic: true,
			Class: Class{Channel: Direct, Source: "direct"}}}
	} else {
		touches = make([]Touch, len(in))
		for k, i := range in {
			t := &touches[k]
			t.Touchpoint = touchpoints[i]
			t.Touchpoint.OccurredAt = t.Touchpoint.OccurredAt.UTC()
			t.Class = Classify(t.Touchpoint.Landing)
		}
	}
	n := len(touches)
	s := splitter{parts: make([]uint64, n), order: make([]int, n)}
	for m := range NumModels {
		total := s.weigh(Model(m), touches, order.At, cfg.HalfLife)
		rev := s.split(order.Revenue, total)
		for i := range touches {
			c := &touches[i].Credits[m]
			c.Weight = float64(s.parts[i]) / float64(total)
			c.Revenue = domain.Amount(rev[i])
		}
		ref := s.split(order.Refunded, total)
		for i := range touches {
			touches[i].Credits[m].Refunded = domain.Amount(ref[i])
		}
	}
	return Result{Order: order, Touches: touches}
}

// splitter holds the scratch space of one Attribute call.
type splitter struct {
	parts  []uint64 // integer weights of the current model
	order  []int    // indices by remainder
	quot   []int64
	remain []uint64
}

// weigh sets s.parts to the integer weights of model m and returns their
// sum (never zero).
func (s *splitter) weigh(m Model, touches []Touch, at time.Time, halfLife time.Duration) uint64 {
	n := len(touches)
	clear(s.parts)
	switch m {
	case FirstTouch:
		s.parts[0] = 1
		return 1
	case LastTouch:
		s.parts[n-1] = 1
		return 1
	case LastNonDirect:
		last := n - 1
		for i := n - 1; i >= 0; i-- {
			if touches[i].Class.Channel != Direct {
				last = i
				break
			}
		}
		s.parts[last] = 1
		return 1
	case Linear:
		for i := range s.parts {
			s.parts[i] = 1
		}
		return uint64(n)
	case PositionBased:
		if n <= 2 {
			for i := range s.parts {
				s.parts[i] = 1
			}
			return uint64(n)
		}
		// 40/20/40 as integers: the ends 2(n-2) each, the n-2 middle
		// touchpoints 1 each, of 5(n-2).
		for i := range s.parts {
			s.parts[i] = 1
		}
		s.parts[0], s.parts[n-1] = uint64(2*(n-2)), uint64(2*(n-2))
		return uint64(5 * (n - 2))
	default: // TimeDecay
		// Relative to the most recent touchpoint (the last), so that its
		// weight is exactly decayScale and no weight underflows to zero
		// for the newest; normalising makes the reference irrelevant.
		// The newest weighs 2^(63-len(n)) (2^59 for 10 touchpoints): exact
		// for whole half-lives, and n of them sum below 2^63.
		newest := at.Sub(touches[n-1].Touchpoint.OccurredAt)
		shift := 63 - bits.Len(uint(n))
		var total uint64
		for i, t := range touches {
			age := at.Sub(t.Touchpoint.OccurredAt) - newest
			s.parts[i] = uint64(math.Round(math.Ldexp(math.Exp2(-float64(age)/float64(halfLife)), shift)))
			total += s.parts[i]
		}
		return total
	}
}
