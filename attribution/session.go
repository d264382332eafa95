package attribution

import (
	"slices"
	"time"
)

// DefaultSessionTimeout is the inactivity that ends a session.
const DefaultSessionTimeout = 30 * time.Minute

// Session is one visit: touchpoints of a visitor without a pause of the
// session timeout between them, and without a change of campaign.
type Session struct {
	// Touchpoint is the session's first touchpoint, its landing; the
	// session is credited as this touchpoint.
	Touchpoint Touchpoint `json:"touchpoint"`
	Class      Class      `json:"class"`
	// Start and End are the first and the last touchpoint's times.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Touchpoints counts the touchpoints of the session.
	Touchpoints int `json:"touchpoints"`
}

// Sessionize groups one visitor's touchpoints (of any order; the caller
// decides who the visitor is: an anonymous id, or a customer with the
// anonymous ids stitched to them) into sessions, chronologically. A
// touchpoint starts a new session when
//
//   - it comes timeout (default 30 minutes when timeout <= 0) or more after
//     the previous touchpoint, or
//   - it is a landing that is not direct and whose class (channel, source,
//     campaign) differs from the session's: a visitor who leaves and comes
//     back through another campaign within the timeout starts a new visit.
//
// The second rule is Universal Analytics' (GA4 no longer splits a session
// on a new campaign); it keeps every campaign that brought the visitor
// back as a touchpoint. A direct touchpoint (internal navigation, a cart
// event, a return without referrer) never splits a session, and neither do
// payment round trips (see Classify).
func Sessionize(touchpoints []Touchpoint, timeout time.Duration) []Session {
	if timeout <= 0 {
		timeout = DefaultSessionTimeout
	}
	order := make([]int, len(touchpoints))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return compareTouchpoints(&touchpoints[a], &touchpoints[b]) })
	var sessions []Session
	for _, i := range order {
		tp := &touchpoints[i]
		class := Classify(tp.Landing)
		at := tp.OccurredAt.UTC()
		if n := len(sessions); n > 0 {
			cur := &sessions[n-1]
			if at.Sub(cur.End) < timeout && (class.Channel == Direct || class == cur.Class) {
				cur.End = at
				cur.Touchpoints++
				continue
			}
		}
		s := Session{Touchpoint: *tp, Class: class, Start: at, End: at, Touchpoints: 1}
		s.Touchpoint.OccurredAt = at
		sessions = append(sessions, s)
	}
	return sessions
}

// Landings returns the sessions' touchpoints, the input of Attribute.
func Landings(sessions []Session) []Touchpoint {
	out := make([]Touchpoint, len(sessions))
	for i, s := range sessions {
		out[i] = s.Touchpoint
	}
	return out
}
