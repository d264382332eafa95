package main

// logCheck compares the acknowledged deliveries with the event log.
type logCheck struct {
	acked      int // distinct acknowledged deliveries (each its own customer)
	missing    int // acknowledged, no event in the log
	duplicated int // acknowledged, more than one event in the log
	unacked    int // in the log, never acknowledged (failed or timed-out posts may still have been applied)
}

// ok reports whether every acknowledged delivery is in the log exactly once.
func (c logCheck) ok() bool { return c.missing == 0 && c.duplicated == 0 }

// checkLog compares ackedStreams, the streams of the acknowledged
// deliveries, with counts, the number of events of the deliveries' type per
// stream in the log.
func checkLog(ackedStreams []string, counts map[string]int) logCheck {
	c := logCheck{}
	seen := make(map[string]bool, len(ackedStreams))
	for _, s := range ackedStreams {
		if seen[s] {
			continue
		}
		seen[s] = true
		c.acked++
		switch n := counts[s]; {
		case n == 0:
			c.missing++
		case n > 1:
			c.duplicated++
		}
	}
	for s := range counts {
		if !seen[s] {
			c.unacked++
		}
	}
	return c
}
