package limits

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Verdict codes: the error.code of the 429 a refused Verdict becomes.
const (
	CodeTooManyFailedAttempts = "too_many_failed_attempts"
	CodeIPBlocked             = "ip_blocked"
)

// Guard protects authentication against brute force, per client key
// (ClientKey: an IPv4 address, or the /64 of an IPv6 address, which one
// subscriber usually holds whole). With the default GuardConfig:
//
//   - Check refuses with ip_blocked while the key is blocked, Retry-After
//     being the rest of the block (at most an hour).
//   - Otherwise Check refuses with too_many_failed_attempts when the key has
//     10 admitted failures in the last minute (an exact sliding window),
//     Retry-After being when the oldest of them leaves the window.
//   - Otherwise Check allows and records nothing. Its Failures field says
//     whether the key has anything on record, so a caller may skip Succeed
//     for the common clean case.
//   - Fail records a failed authentication. It applies the same two tests
//     atomically with the recording: the failure is admitted (Allowed) only
//     when neither refuses, and only admitted failures fill the minute
//     window, so 64 concurrent Fails on a fresh key admit exactly 10. A
//     caller answers an admitted failure with 401 and a refused one with the
//     Verdict's 429.
//   - Two day counts are kept. The failure count counts admitted failures
//     only: a request the guard refused (a refused Check, a refused Fail)
//     was not an authentication attempt, its credential never decided
//     anything, so a burst of requests in one second cannot block every
//     client behind a shared address; reaching the block takes sustained
//     failures (at least ten minutes of them with the default rules). The
//     attempt count counts every attempt, that is every Fail and every
//     refused Check: it feeds the operator's alert, which must still see a
//     flood the guard keeps refusing (counting admitted failures only, a
//     blocked key could reach about 125 a day, never the alert's 1000).
//     Both are kept in buckets of an hour; they cover between 24 and 25
//     hours, never less, so they block and alert no later than an exact
//     count would.
//   - An admitted failure that brings the failure count to 100 or more
//     while the key is not blocked blocks it for an hour (that failure is
//     still answered 401; the next Check refuses). Attempts during a block
//     do not extend it; the first admitted failure after it, with the
//     failure count still at 100 or more, starts the next one.
//   - The attempt that brings the attempt count to 1000 or more carries
//     Alert, once: the key does not alert again within the next 24 hours
//     unless Succeed reset it. A refused Check may carry Alert, too.
//   - Succeed resets the key's counts and its alert. It does not lift a
//     block in force: Check refuses a blocked key before any credential is
//     looked at, so only a request already past Check can succeed during a
//     block, and an attacker holding one valid token cannot lift a block
//     with it.
//
// Methods are safe for concurrent use, also from several servers sharing
// one store (Redis): each call is one atomic step. A store that does
// network I/O honours ctx; a store failure is returned as an error whose
// domain code is unavailable. Check, Fail and Succeed never return an error
// for an invalid address: every address that cannot be parsed shares one
// key.
type Guard interface {
	Check(ctx context.Context, ip netip.Addr) (Verdict, error)
	Fail(ctx context.Context, ip netip.Addr) (Verdict, error)
	Succeed(ctx context.Context, ip netip.Addr) error
}

// Verdict is a Guard's answer.
type Verdict struct {
	// Allowed: Check lets the request try to authenticate; Fail admitted
	// the failure (answer 401).
	Allowed bool
	// Code is CodeTooManyFailedAttempts or CodeIPBlocked when refused, ""
	// when allowed.
	Code string
	// RetryAfter is, when refused, how long until the key may try again.
	RetryAfter time.Duration
	// Alert is set on the one attempt that crossed the alert threshold.
	// The caller emits the alert (an event, an error log line without the
	// address, a notification).
	Alert bool
	// Failures says whether the key has failures on record after the call;
	// Succeed is needed only when it is set.
	Failures bool
}

// ClientKey returns the key the Guard counts ip under: the address itself
// for IPv4 (IPv4-mapped IPv6 addresses are unmapped first) and its /64 for
// IPv6, with any zone dropped. An invalid address gives the zero Prefix,
// one key shared by every address that could not be parsed.
func ClientKey(ip netip.Addr) netip.Prefix {
	ip = ip.WithZone("").Unmap()
	switch {
	case ip.Is4():
		return netip.PrefixFrom(ip, 32)
	case ip.Is6():
		p, _ := ip.Prefix(64)
		return p
	}
	return netip.Prefix{}
}

// GuardConfig holds the Guard's rules. The zero value of a field takes its
// default (the specification's values); tests shorten the windows.
type GuardConfig struct {
	// FailuresPerWindow admitted failures within Window make Check refuse
	// with too_many_failed_attempts. Default 10, at most 1000.
	FailuresPerWindow int
	// Window is the sliding window of FailuresPerWindow. Default a minute.
	Window time.Duration
	// BlockAt admitted failures within DayWindow block the key for
	// BlockFor. Default 100.
	BlockAt int
	// BlockFor is the length of a block. Default an hour.
	BlockFor time.Duration
	// AlertAt attempts within DayWindow raise the alert. Default 1000.
	AlertAt int
	// DayWindow is the window of BlockAt and AlertAt. Default 24 hours.
	DayWindow time.Duration
	// DayBuckets is the number of buckets DayWindow is counted in; the
	// count covers up to one bucket more than DayWindow. Default 24.
	DayBuckets int
}

// SetDefaults fills in the zero fields.
func (c *GuardConfig) SetDefaults() {
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setInt(&c.FailuresPerWindow, 10)
	setDur(&c.Window, time.Minute)
	setInt(&c.BlockAt, 100)
	setDur(&c.BlockFor, time.Hour)
	setInt(&c.AlertAt, 1000)
	setDur(&c.DayWindow, 24*time.Hour)
	setInt(&c.DayBuckets, 24)
}

// Validate reports every problem at once. Durations must be whole
// milliseconds (the Redis adapter counts in milliseconds), and DayWindow
// must split into DayBuckets whole-millisecond buckets.
func (c GuardConfig) Validate() error {
	var errs []error
	positive := func(name string, v int) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s must be positive, not %d", name, v))
		}
	}
	millis := func(name string, d time.Duration) {
		if d < time.Millisecond || d%time.Millisecond != 0 {
			errs = append(errs, fmt.Errorf("%s must be a positive whole number of milliseconds, not %v", name, d))
		}
	}
	positive("FailuresPerWindow", c.FailuresPerWindow)
	if c.FailuresPerWindow > 1000 {
		errs = append(errs, fmt.Errorf("FailuresPerWindow must be at most 1000, not %d", c.FailuresPerWindow))
	}
	positive("BlockAt", c.BlockAt)
	positive("AlertAt", c.AlertAt)
	positive("DayBuckets", c.DayBuckets)
	millis("Window", c.Window)
	millis("BlockFor", c.BlockFor)
	millis("DayWindow", c.DayWindow)
	if c.Window > c.DayWindow {
		errs = append(errs, fmt.Errorf("Window %v must not be longer than DayWindow %v", c.Window, c.DayWindow))
	}
	if c.DayBuckets > 1000 {
		errs = append(errs, fmt.Errorf("DayBuckets must be at most 1000, not %d", c.DayBuckets))
	} else if c.DayBuckets > 0 && c.DayWindow > 0 {
		if b := c.DayWindow / time.Duration(c.DayBuckets); b*time.Duration(c.DayBuckets) != c.DayWindow || b%time.Millisecond != 0 || b == 0 {
			errs = append(errs, fmt.Errorf("DayWindow %v does not split into %d whole-millisecond buckets", c.DayWindow, c.DayBuckets))
		}
	}
	return errors.Join(errs...)
}

// Bucket is the width of one day-count bucket.
func (c GuardConfig) Bucket() time.Duration { return c.DayWindow / time.Duration(c.DayBuckets) }
