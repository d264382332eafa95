package auth

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// Use is the last use of a token: when and from which address.
type Use struct {
	TokenID string
	At      time.Time
	IP      netip.Addr
}

// UseStore keeps last uses durably (never in the event log: that would be
// an event per request).
type UseStore interface {
	SaveUses(ctx context.Context, uses []Use) error
}

// LastUsed coalesces the last use of every token in memory; Flush writes
// the latest of each to a UseStore. Recording is a map write under a lock.
type LastUsed struct {
	mu      sync.Mutex
	pending map[string]Use
}

// NewLastUsed returns an empty recorder.
func NewLastUsed() *LastUsed { return &LastUsed{pending: map[string]Use{}} }

// Record notes a use; a later use of the same token replaces it.
func (l *LastUsed) Record(tokenID string, at time.Time, ip netip.Addr) {
	l.mu.Lock()
	if cur, ok := l.pending[tokenID]; !ok || at.After(cur.At) {
		l.pending[tokenID] = Use{TokenID: tokenID, At: at, IP: ip}
	}
	l.mu.Unlock()
}

// Flush saves the pending uses. On failure they are put back (unless a
// newer use arrived meanwhile), so nothing is lost.
func (l *LastUsed) Flush(ctx context.Context, store UseStore) error {
	l.mu.Lock()
	if len(l.pending) == 0 {
		l.mu.Unlock()
		return nil
	}
	batch := make([]Use, 0, len(l.pending))
	for _, u := range l.pending {
		batch = append(batch, u)
	}
	l.pending = map[string]Use{}
	l.mu.Unlock()
	if err := store.SaveUses(ctx, batch); err != nil {
		for _, u := range batch {
			l.Record(u.TokenID, u.At, u.IP)
		}
		return err
	}
	return nil
}

// Run flushes every interval until ctx ends, then flushes once more with
// a fresh context, so the latest uses survive a shutdown. It returns when
// that last flush is done.
func (l *LastUsed) Run(ctx context.Context, store UseStore, interval time.Duration, onErr func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := l.Flush(ctx, store); err != nil && onErr != nil {
				onErr(err)
			}
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if err := l.Flush(final, store); err != nil && onErr != nil {
				onErr(err)
			}
			cancel()
			return
		}
	}
}
