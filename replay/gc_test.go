package replay

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's target without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// A replay raises the collector's target while it runs, never lowers one
// the process set higher (or turned off), and restores the process's.
func TestRaiseGCRaisesOnlyAndRestores(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, c := range []struct{ process, asked, during int }{
		{100, 400, 400},
		{800, 400, 800},
		{-1, 400, -1},
		{100, -1, 100},
	} {
		debug.SetGCPercent(c.process)
		restore := raiseGC(c.asked)
		if got := gcPercent(); got != c.during {
			t.Errorf("process %d, asked %d: %d while raised, want %d", c.process, c.asked, got, c.during)
		}
		restore()
		if got := gcPercent(); got != c.process {
			t.Errorf("process %d, asked %d: %d after, want %d restored", c.process, c.asked, got, c.process)
		}
	}
}
