package gcra_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/limits"
	"github.com/cgp-platform/cgp/limits/gcra"
)

// store is a throttled store whose every operation answers as told.
type store struct {
	err      error
	swaps    int // compare-and-swaps tried
	value    int64
	ttls     []time.Duration
	set      []int64 // values written
	swapFail bool
}

func (s *store) GetWithTime(context.Context, string) (int64, time.Time, error) {
	return s.value, time.Unix(0, 0), s.err
}

func (s *store) SetIfNotExistsWithTTL(_ context.Context, _ string, v int64, ttl time.Duration) (bool, error) {
	s.ttls = append(s.ttls, ttl)
	s.set = append(s.set, v)
	return true, nil
}

func (s *store) CompareAndSwapWithTTL(_ context.Context, _ string, _, _ int64, ttl time.Duration) (bool, error) {
	s.swaps++
	s.ttls = append(s.ttls, ttl)
	return !s.swapFail, nil
}

func TestStoreErrorIsUnavailable(t *testing.T) {
	cause := errors.New("connection refused")
	l := gcra.New(&store{err: cause}, gcra.Config{})
	_, err := l.Allow(context.Background(), "tok", limits.PerMinute(10))
	if domain.ErrorCode(err) != domain.CodeUnavailable || !errors.Is(err, cause) {
		t.Fatalf("Allow on a failing store: %v, want code unavailable wrapping the cause", err)
	}
}

func TestContentionBounded(t *testing.T) {
	s := &store{value: 1, swapFail: true}
	l := gcra.New(s, gcra.Config{CASAttempts: 7})
	_, err := l.Allow(context.Background(), "tok", limits.PerMinute(10))
	if domain.ErrorCode(err) != domain.CodeUnavailable || s.swaps != 7 {
		t.Fatalf("Allow losing every swap: %v after %d swaps, want unavailable after 7", err, s.swaps)
	}
}

func TestClockAndExpiry(t *testing.T) {
	s := &store{value: -1}
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	l := gcra.New(s, gcra.Config{Now: func() time.Time { return at }})
	d, err := l.Allow(context.Background(), "tok", limits.PerMinute(60))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed || !d.Reset.Equal(at.Add(time.Second)) {
		t.Fatalf("got %+v, want allowed with reset at %v", d, at.Add(time.Second))
	}
	// The injected clock, not the store's (the epoch), dates the state.
	if want := at.Add(time.Second).UnixNano(); len(s.set) != 1 || s.set[0] != want {
		t.Fatalf("state written %v, want [%d]", s.set, want)
	}
	if len(s.ttls) != 1 || s.ttls[0] != 2*time.Second {
		t.Fatalf("expiries asked of the store: %v, want [2s] (1s of state and 1s of margin)", s.ttls)
	}
}
