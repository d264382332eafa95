package limitstest

import (
	"sync"
	"time"
)

// Start is where every Clock starts: a whole second, so that times in
// milliseconds and in nanoseconds agree.
var Start = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)

// Clock is a manual clock, safe for concurrent use. It moves only when
// Advance is called.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at Start.
func NewClock() *Clock { return &Clock{t: Start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
