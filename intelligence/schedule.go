package intelligence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

// Defaults of the daily schedule.
const (
	// DefaultDailyAt is the time of day (UTC) of the daily runs: 02:00.
	DefaultDailyAt = 2 * time.Hour
	// DefaultStaleAfter is how long a scheduled run may stay running
	// before a pass records it as failed: its server stopped mid-run (a
	// run takes seconds to minutes).
	DefaultStaleAfter = time.Hour
	// DefaultRunTimeout bounds one shop's run.
	DefaultRunTimeout = 10 * time.Minute
	// DefaultTick is the interval between two passes of Loop.
	DefaultTick = time.Minute
	// StaleRunReason is the reason recorded on a scheduled run that never
	// finished.
	StaleRunReason = "the run did not finish: the server running it stopped"
	shopPage       = 500
)

// ParseDailyAt parses the time of day of the daily runs: "HH:MM" in UTC
// (00:00 to 23:59) gives the time since midnight and on; "off" or ""
// gives on false (no schedule).
func ParseDailyAt(s string) (at time.Duration, on bool, err error) {
	if s == "" || s == "off" {
		return 0, false, nil
	}
	bad := fmt.Errorf("daily time %q: want HH:MM (UTC, 00:00 to 23:59) or off", s)
	if len(s) != 5 || s[2] != ':' {
		return 0, false, bad
	}
	h, err1 := strconv.ParseUint(s[:2], 10, 8)
	m, err2 := strconv.ParseUint(s[3:], 10, 8)
	if err1 != nil || err2 != nil || h > 23 || m > 59 {
		return 0, false, bad
	}
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute, true, nil
}

// InstalledShops lists the shops whose app is installed, in id order
// (projections/tenancy.Queries).
type InstalledShops interface {
	InstalledShops(ctx context.Context, after string, limit int) ([]string, error)
}

// Scheduler runs decision intelligence once a day per installed shop, at
// At (UTC), trigger schedule. A shop runs when the day's time has passed
// and its run of the day is not recorded: at the daily time, at start-up
// after downtime that spanned it (catch-up), or on the day a shop
// installs the app after the daily time.
//
// Exactly once per shop and day: the day's run id and start event id
// derive from shop and day (Runner.RunDay), so when several servers share
// the log, or a server restarts mid-pass, the log records one start and
// every other attempt computes nothing. There is no lock.
//
// A run started but never finished (its server stopped mid-run) is
// recorded as failed (StaleRunReason) by the first pass that finds it
// running StaleAfter after its start, and is not retried that day: the
// day's run id is taken. The next day's run happens as usual; `cgp di run`
// runs a shop on demand meanwhile.
//
// The clock is the caller's: Due and RunDue take now, Loop a clock.
type Scheduler struct {
	Runner *Runner
	Shops  InstalledShops
	// At is the time of day of the runs (UTC, since midnight).
	At time.Duration
	// StaleAfter: DefaultStaleAfter when 0. RunTimeout: DefaultRunTimeout
	// when 0.
	StaleAfter, RunTimeout time.Duration
	// CatchUp, when set, is called before each pass: it waits until the
	// read models (the runs' input and the shop list) reach the log's head.
	CatchUp func(ctx context.Context) error
	// Meta names the runs' events' actor; system:di_schedule when empty.
	Meta   commands.Meta
	Logger zerolog.Logger

	mu sync.Mutex
	// settled holds the (shop, day) pairs known to need nothing more: the
	// run finished, or (for yesterday) was never made.
	settled map[settledKey]bool
}

type settledKey struct{ shop, day string }

// Pass is what one RunDue did.
type Pass struct {
	// Ran lists the runs this pass started, in order.
	Ran []Ran
	// Elsewhere lists the shops whose run of the day another server (or
	// an earlier attempt) recorded first: nothing was computed for them.
	Elsewhere []string
	// Abandoned lists the stale runs recorded as failed.
	Abandoned []string
}

// Ran is one scheduled run.
type Ran struct {
	Shop, RunID, Status string
	Recommendations     int
	Duration            time.Duration
	Err                 error
}

// Due returns the shops whose run of now's UTC day is due: installed, the
// daily time passed, and no run of the day recorded.
func (s *Scheduler) Due(ctx context.Context, now time.Time) ([]string, error) {
	p, err := s.plan(ctx, now)
	return p.due, err
}

type plan struct {
	day   string
	due   []string
	stale []settledKey // with the run's day
}

func (s *Scheduler) plan(ctx context.Context, now time.Time) (plan, error) {
	now = now.UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	today, yesterday := now.Format(domain.RunDayLayout), midnight.AddDate(0, 0, -1).Format(domain.RunDayLayout)
	p := plan{day: today}
	days := []string{yesterday}
	if now.Sub(midnight) >= s.At {
		days = append(days, today)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settled == nil {
		s.settled = map[settledKey]bool{}
	}
	for k := range s.settled {
		if k.day < yesterday {
			delete(s.settled, k)
		}
	}
	staleAfter := s.StaleAfter
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	after := ""
	for {
		ids, err := s.Shops.InstalledShops(ctx, after, shopPage)
		if err != nil {
			return plan{}, err
		}
		for _, shop := range ids {
			for _, day := range days {
				k := settledKey{shop, day}
				if s.settled[k] {
					continue
				}
				run, err := s.Runner.Commands.DecisionRun(ctx, shop, domain.ScheduledRunID(shop, day))
				if err != nil {
					return plan{}, err
				}
				switch {
				case run.Status == "" && day == today:
					p.due = append(p.due, shop)
				case run.Status == domain.RunRunning:
					if now.Sub(run.StartedAt) >= staleAfter {
						p.stale = append(p.stale, k)
					}
				default: // finished, or yesterday's never made: nothing to do
					s.settled[k] = true
				}
			}
		}
		if len(ids) < shopPage {
			return p, nil
		}
		after = ids[len(ids)-1]
	}
}

// RunDue runs one pass at now: it records the stale runs as failed, then
// runs each due shop, one at a time, each bounded by RunTimeout, until
// ctx ends.
func (s *Scheduler) RunDue(ctx context.Context, now time.Time) (Pass, error) {
	var pass Pass
	if s.CatchUp != nil {
		if err := s.CatchUp(ctx); err != nil {
			return pass, fmt.Errorf("read models catching up: %w", err)
		}
	}
	p, err := s.plan(ctx, now)
	if err != nil {
		return pass, err
	}
	meta := s.Meta
	if meta.Actor == "" {
		meta = commands.Meta{Actor: "system:di_schedule", Source: "system"}
	}
	for _, k := range p.stale {
		runID := domain.ScheduledRunID(k.shop, k.day)
		_, err := s.Runner.Commands.FailDecisionRun(ctx, commands.FailDecisionRun{ShopID: k.shop, RunID: runID, Reason: StaleRunReason}, meta)
		if err != nil && domain.ErrorCode(err) != domain.CodeConflict { // conflict: it finished meanwhile
			return pass, err
		}
		s.settle(k)
		if err == nil {
			pass.Abandoned = append(pass.Abandoned, runID)
			s.Logger.Warn().Str("shop_id", k.shop).Str("run_id", runID).Str("day", k.day).Msg("scheduled decision run never finished: recorded as failed")
		}
	}
	timeout := s.RunTimeout
	if timeout <= 0 {
		timeout = DefaultRunTimeout
	}
	for _, shop := range p.due {
		if ctx.Err() != nil {
			return pass, ctx.Err()
		}
		began := time.Now()
		runCtx, cancel := context.WithTimeout(ctx, timeout)
		out, err := s.Runner.RunDay(runCtx, shop, p.day, meta)
		cancel()
		if errors.Is(err, domain.ErrRunStarted) {
			pass.Elsewhere = append(pass.Elsewhere, shop)
			s.Logger.Debug().Str("shop_id", shop).Str("run_id", out.RunID).Msg("scheduled decision run already started elsewhere")
			continue
		}
		r := Ran{Shop: shop, RunID: out.RunID, Status: out.Status, Recommendations: len(out.Recommendations), Duration: time.Since(began), Err: err}
		pass.Ran = append(pass.Ran, r)
		if out.Status == domain.RunCompleted || out.Status == domain.RunFailed {
			s.settle(settledKey{shop, p.day})
		}
		ev := s.Logger.Info()
		if err != nil {
			ev = s.Logger.Error().Err(err)
		}
		ev.Str("shop_id", shop).Str("run_id", r.RunID).Str("status", r.Status).Int("recommendations", r.Recommendations).
			Float64("duration_ms", float64(r.Duration)/float64(time.Millisecond)).Msg("scheduled decision run")
	}
	return pass, nil
}

func (s *Scheduler) settle(k settledKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settled == nil {
		s.settled = map[settledKey]bool{}
	}
	s.settled[k] = true
}

// Loop runs a pass at once (the catch-up after downtime) and then every
// tick (DefaultTick when 0) until ctx ends; now is the clock. A pass that
// fails is logged and the next tick tries again.
func (s *Scheduler) Loop(ctx context.Context, now func() time.Time, tick time.Duration) {
	if tick <= 0 {
		tick = DefaultTick
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		p, err := s.RunDue(ctx, now())
		switch {
		case err != nil && ctx.Err() == nil:
			s.Logger.Error().Err(err).Msg("decision-intelligence schedule pass")
		case err == nil:
			s.Logger.Debug().Int("ran", len(p.Ran)).Int("elsewhere", len(p.Elsewhere)).Int("abandoned", len(p.Abandoned)).
				Msg("decision-intelligence schedule pass")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
