package auth

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// Use is the last use of a token: when and from which address.
type Use struct {
	TokenID string
	At      time.Time
	IP      netip.Addr
}

// Period is a billing period, a calendar month in UTC, as year*100+month
// (202611 is November 2026).
type Period int32

// PeriodOf returns the billing period holding t.
func PeriodOf(t time.Time) Period {
	t = t.UTC()
	return Period(t.Year()*100 + int(t.Month()))
}

// Start is the first instant of the period.
func (p Period) Start() time.Time {
	return time.Date(int(p)/100, time.Month(int(p)%100), 1, 0, 0, 0, 0, time.UTC)
}

// End is the first instant after the period (the next one's Start).
func (p Period) End() time.Time { return p.Start().AddDate(0, 1, 0) }

// String is the period as YYYY-MM.
func (p Period) String() string { return fmt.Sprintf("%04d-%02d", int(p)/100, int(p)%100) }

// RequestCount is a number of admitted admin API requests of one token of
// one shop in one billing period.
type RequestCount struct {
	ShopID  string // "" for a master token
	TokenID string
	Period  Period
	Count   int64
}

// UseStore keeps last uses and request counts durably (never in the event
// log: that would be an event per request).
type UseStore interface {
	// SaveUses saves a batch in one transaction: a use replaces an older
	// last use of its token; a count is added to the stored count of its
	// shop, token and period. On error nothing of the batch is saved.
	SaveUses(ctx context.Context, uses []Use, counts []RequestCount) error
}

// UseReader reads what a UseStore saved.
type UseReader interface {
	// RequestCounts returns the stored request count of each token of
	// shopID in period (tokens without requests are absent).
	RequestCounts(ctx context.Context, shopID string, period Period) (map[string]int64, error)
	// Get returns the stored last use of a token (ok false when none).
	Get(ctx context.Context, tokenID string) (u Use, ok bool, err error)
}

// countKey is what a request is counted under.
type countKey struct {
	shop, token string
	period      Period
}

// LastUsed coalesces in memory the last use of every token and the number
// of admitted requests per shop, token and billing period; Flush writes
// them to a UseStore. Recording and counting are a map write under a lock
// (no allocation once the token's entries exist: the maps are cleared,
// not replaced, by a flush).
type LastUsed struct {
	mu      sync.Mutex
	pending map[string]Use
	counts  map[countKey]int64

	// flushMu orders flushes and usage reads: a read sees a batch either
	// still in memory or already committed, never in between (neither, or
	// both).
	flushMu sync.Mutex
}

// NewLastUsed returns an empty recorder.
func NewLastUsed() *LastUsed {
	return &LastUsed{pending: map[string]Use{}, counts: map[countKey]int64{}}
}

// Record notes a use; a later use of the same token replaces it.
func (l *LastUsed) Record(tokenID string, at time.Time, ip netip.Addr) {
	l.mu.Lock()
	l.record(Use{TokenID: tokenID, At: at, IP: ip})
	l.mu.Unlock()
}

func (l *LastUsed) record(u Use) {
	if cur, ok := l.pending[u.TokenID]; !ok || u.At.After(cur.At) {
		l.pending[u.TokenID] = u
	}
}

// Count counts one request of tokenID (of shopID, "" for a master token)
// in the billing period holding at.
func (l *LastUsed) Count(shopID, tokenID string, at time.Time) {
	k := countKey{shop: shopID, token: tokenID, period: PeriodOf(at)}
	l.mu.Lock()
	l.counts[k]++
	l.mu.Unlock()
}

// Flush saves the pending uses and counts in one batch. On failure they
// are put back (a use unless a newer one arrived meanwhile; a count added
// to what was counted meanwhile), so nothing is lost or counted twice.
func (l *LastUsed) Flush(ctx context.Context, store UseStore) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if len(l.pending) == 0 && len(l.counts) == 0 {
		l.mu.Unlock()
		return nil
	}
	uses := make([]Use, 0, len(l.pending))
	for _, u := range l.pending {
		uses = append(uses, u)
	}
	counts := make([]RequestCount, 0, len(l.counts))
	for k, n := range l.counts {
		counts = append(counts, RequestCount{ShopID: k.shop, TokenID: k.token, Period: k.period, Count: n})
	}
	clear(l.pending)
	clear(l.counts)
	l.mu.Unlock()
	if err := store.SaveUses(ctx, uses, counts); err != nil {
		l.mu.Lock()
		for _, u := range uses {
			l.record(u)
		}
		for _, c := range counts {
			l.counts[countKey{shop: c.ShopID, token: c.TokenID, period: c.Period}] += c.Count
		}
		l.mu.Unlock()
		return err
	}
	return nil
}

// TokenUsage is one token's requests in a billing period and its last use.
type TokenUsage struct {
	TokenID  string
	Requests int64
	// LastUsedAt is the token's last use in any period (zero if unknown).
	LastUsedAt time.Time
}

// ShopUsage returns the requests of every token of shopID that made any in
// period: what store holds plus what is still pending here, so the answer
// is exact at once (for the requests this process counted). It is sorted
// by requests, most first, then by token id. It waits for a flush in
// progress.
func (l *LastUsed) ShopUsage(ctx context.Context, store UseReader, shopID string, period Period) ([]TokenUsage, error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	stored, err := store.RequestCounts(ctx, shopID, period)
	if err != nil {
		return nil, err
	}
	byToken := make(map[string]*TokenUsage, len(stored))
	for id, n := range stored {
		byToken[id] = &TokenUsage{TokenID: id, Requests: n}
	}
	for id, tu := range byToken {
		u, ok, err := store.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			tu.LastUsedAt = u.At
		}
	}
	// The pending counts are read after the stored ones: they only grow
	// meanwhile, and no flush can move them to the store (flushMu).
	l.mu.Lock()
	for k, n := range l.counts {
		if k.shop != shopID || k.period != period {
			continue
		}
		tu := byToken[k.token]
		if tu == nil {
			tu = &TokenUsage{TokenID: k.token}
			byToken[k.token] = tu
		}
		tu.Requests += n
	}
	for id, tu := range byToken {
		if u, ok := l.pending[id]; ok && u.At.After(tu.LastUsedAt) {
			tu.LastUsedAt = u.At
		}
	}
	l.mu.Unlock()
	out := make([]TokenUsage, 0, len(byToken))
	for _, tu := range byToken {
		out = append(out, *tu)
	}
	slices.SortFunc(out, func(a, b TokenUsage) int {
		if c := cmp.Compare(b.Requests, a.Requests); c != 0 {
			return c
		}
		return cmp.Compare(a.TokenID, b.TokenID)
	})
	return out, nil
}

// Run flushes every interval until ctx ends, then flushes once more with
// a fresh context, so the latest uses and counts survive a shutdown. It
// returns when that last flush is done.
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

// Last returns a token's last use: the one still pending here when newer
// than the stored one (ok false when neither knows any).
func (l *LastUsed) Last(ctx context.Context, store UseReader, tokenID string) (Use, bool, error) {
	u, ok, err := store.Get(ctx, tokenID)
	if err != nil {
		return Use{}, false, err
	}
	l.mu.Lock()
	p, pending := l.pending[tokenID]
	l.mu.Unlock()
	if pending && (!ok || p.At.After(u.At)) {
		return p, true, nil
	}
	return u, ok, nil
}
