package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/cgp-platform/cgp/lease"
)

// Job is one piece of background work of the server: it runs until its ctx
// ends and then returns nil, or returns an error when it cannot go on.
type Job struct {
	// Name is stable and short: it names the job in logs and errors.
	Name string
	Run  func(ctx context.Context) error
}

// Supervisor runs the server's background jobs: every job starts together,
// stops when the supervisor's ctx ends, and reports a failure the same way
// (logged once with the job's name when it happens, and returned by Wait).
// A failing job stops only itself: the others, and the HTTP surface, go on.
// A job that returns its context's cancellation after Stop stopped cleanly.
type Supervisor struct {
	logger zerolog.Logger
	jobs   []Job

	mu      sync.Mutex
	running map[string]bool
	group   *errgroup.Group
	cancel  context.CancelFunc
}

// NewSupervisor returns a supervisor with no jobs; logger receives failures.
func NewSupervisor(logger zerolog.Logger) *Supervisor {
	return &Supervisor{logger: logger.With().Str("component", "supervisor").Logger(), running: map[string]bool{}}
}

// Add adds a job; call it before Start. A nil Run is skipped (a job that is
// off in this configuration).
func (s *Supervisor) Add(name string, run func(ctx context.Context) error) {
	if run == nil {
		return
	}
	s.jobs = append(s.jobs, Job{Name: name, Run: run})
}

// Jobs are the names of the jobs added, in order.
func (s *Supervisor) Jobs() []string {
	names := make([]string, len(s.jobs))
	for i, j := range s.jobs {
		names[i] = j.Name
	}
	return names
}

// Start starts every job with a context that ends with ctx or Stop. It may
// be called once.
func (s *Supervisor) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	g := &errgroup.Group{}
	s.mu.Lock()
	s.group, s.cancel = g, cancel
	for _, j := range s.jobs {
		s.running[j.Name] = true
	}
	s.mu.Unlock()
	for _, j := range s.jobs {
		g.Go(func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
				s.mu.Lock()
				delete(s.running, j.Name)
				s.mu.Unlock()
				if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
					err = nil // stopped while it was busy: a clean stop
				}
				if err != nil {
					err = fmt.Errorf("job %s: %w", j.Name, err)
					s.logger.Error().Err(err).Str("job", j.Name).Msg("background job failed")
				}
			}()
			return j.Run(ctx)
		})
	}
}

// Stop ends every job's context and waits until all returned or ctx ends
// (the shutdown's grace period); then it returns the first job failure, or
// an error naming the jobs still running.
func (s *Supervisor) Stop(ctx context.Context) error {
	s.mu.Lock()
	g, cancel := s.group, s.cancel
	s.mu.Unlock()
	if g == nil {
		return nil
	}
	cancel()
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		s.mu.Lock()
		var left []string
		for name := range s.running {
			left = append(left, name)
		}
		s.mu.Unlock()
		slices.Sort(left)
		return errors.Join(fmt.Errorf("background jobs still running after the grace period: %v", left), ctx.Err())
	}
}

// OneAtATime returns run made to run on one server at a time: it waits
// for the lease named name, runs run while it holds it, and when the lease
// is lost (run's ctx ends, run returns) waits for it again and runs run
// anew, until ctx ends; then it returns nil. run's own failure is
// returned as it is. A nil run stays nil (a job that is off).
//
// run must stop when its ctx ends and be able to start again after it
// returned: a job holds no state of one run that the next cannot take
// over (projections.Runtime resumes from its checkpoints).
func OneAtATime(l lease.Lease, name string, logger zerolog.Logger, run func(ctx context.Context) error) func(ctx context.Context) error {
	if run == nil {
		return nil
	}
	return func(ctx context.Context) error {
		for {
			err := l.Run(ctx, name, run)
			if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled) || errors.Is(err, lease.ErrLost)) {
				return nil // stopped, while waiting or running
			}
			if !errors.Is(err, lease.ErrLost) {
				return err
			}
			logger.Warn().Err(err).Str("lease", name).Msg("lease lost: the job stopped and waits to take it again")
		}
	}
}

// EveryTick runs pass at once and then every interval until ctx ends, and
// returns nil then (after the pass under way, if any): a periodic job.
func EveryTick(ctx context.Context, every time.Duration, pass func(ctx context.Context)) error {
	return EveryTickOrWake(ctx, every, nil, pass)
}

// EveryTickOrWake is EveryTick that also runs pass whenever wake
// delivers (nil: never).
func EveryTickOrWake(ctx context.Context, every time.Duration, wake <-chan struct{}, pass func(ctx context.Context)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		pass(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-wake:
		}
	}
}
