// Package sessionstest is the contract suite of the admin interface's
// session stores (adminui.SessionStore).
package sessionstest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/adminui"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Run tests a session store: ids, the idle and absolute timeouts on the
// store's clock, deletion, unknown ids. open returns a fresh store whose
// clock is now.
func Run(t *testing.T, open func(t *testing.T, now func() time.Time) adminui.SessionStore) {
	ctx := context.Background()
	c := &clock{now: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
	s := open(t, c.Now)
	defer s.Close()

	idle, err := s.Create(ctx, "usr_idle")
	if err != nil {
		t.Fatal(err)
	}
	busy, err := s.Create(ctx, "usr_busy")
	if err != nil {
		t.Fatal(err)
	}
	if len(idle) != 43 || idle == busy {
		t.Fatalf("ids %q %q", idle, busy)
	}
	// The busy session is used every 11 hours; the idle one not.
	for i := 0; i < 15; i++ {
		c.Add(11 * time.Hour)
		if u, err := s.Lookup(ctx, busy); err != nil || u != "usr_busy" {
			t.Fatalf("busy session after %d uses: %q %v", i+1, u, err)
		}
	}
	if u, _ := s.Lookup(ctx, idle); u != "" {
		t.Fatalf("the idle session lives: %q", u)
	}
	// 169 hours in, past 7 days: the busy one ends too.
	c.Add(4 * time.Hour)
	if u, _ := s.Lookup(ctx, busy); u != "" {
		t.Fatalf("the session outlived the absolute timeout: %q", u)
	}

	gone, err := s.Create(ctx, "usr_out")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.Lookup(ctx, gone); u != "" {
		t.Fatalf("a deleted session lives: %q", u)
	}
	if u, _ := s.Lookup(ctx, "not-a-session"); u != "" {
		t.Fatalf("an unknown id: %q", u)
	}
}
