package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/app"
)

func TestSupervisorStartsEveryJobAndStopsThemOnStop(t *testing.T) {
	s := app.NewSupervisor(zerolog.Nop())
	started := make(chan string, 3)
	stopped := make(chan string, 3)
	for _, name := range []string{"a", "b", "c"} {
		s.Add(name, func(ctx context.Context) error {
			started <- name
			<-ctx.Done()
			stopped <- name
			return nil
		})
	}
	s.Add("off", nil)
	if got := strings.Join(s.Jobs(), ","); got != "a,b,c" {
		t.Fatalf("jobs = %s", got)
	}
	s.Start(context.Background())
	for range 3 {
		<-started
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(stopped) != 3 {
		t.Fatalf("%d jobs stopped, want 3", len(stopped))
	}
}

func TestSupervisorReportsAFailureWithTheJobsNameAndKeepsTheOthers(t *testing.T) {
	var logs lockedBuffer
	s := app.NewSupervisor(zerolog.New(&logs))
	failed := make(chan struct{})
	otherStopped := false
	s.Add("broken", func(ctx context.Context) error {
		defer close(failed)
		return errors.New("store gone")
	})
	s.Add("panicky", func(ctx context.Context) error { panic("boom") })
	s.Add("steady", func(ctx context.Context) error {
		<-failed
		<-ctx.Done() // not cancelled by the failure: only Stop ends it
		otherStopped = true
		return nil
	})
	s.Start(context.Background())
	<-failed
	err := s.Stop(context.Background())
	if err == nil || (!strings.Contains(err.Error(), "job broken: store gone") && !strings.Contains(err.Error(), "job panicky: panic: boom")) {
		t.Fatalf("Stop = %v, want the failure named by its job", err)
	}
	if !otherStopped {
		t.Fatal("the steady job did not run until Stop")
	}
	for _, want := range []string{`"job":"broken"`, `"job":"panicky"`, "background job failed"} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("log lacks %s: %s", want, logs.String())
		}
	}
}

func TestSupervisorStopNamesTheJobsStillRunningWhenTheGracePeriodEnds(t *testing.T) {
	s := app.NewSupervisor(zerolog.Nop())
	release := make(chan struct{})
	started := make(chan struct{})
	s.Add("stuck", func(ctx context.Context) error {
		close(started)
		<-release // ignores ctx
		return nil
	})
	s.Add("polite", func(ctx context.Context) error { <-ctx.Done(); return nil })
	s.Start(context.Background())
	<-started
	grace, cancel := context.WithCancel(context.Background())
	cancel() // the grace period is over
	err := s.Stop(grace)
	close(release)
	if err == nil || !strings.Contains(err.Error(), "stuck") || !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop = %v, want the stuck job named", err)
	}
}

// lockedBuffer is a log sink written by several jobs at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A job interrupted by Stop in the middle of its work returns ctx's
// error: that is a clean stop, not a failure.
func TestSupervisorTakesACancelledJobForAStoppedOne(t *testing.T) {
	var logs lockedBuffer
	s := app.NewSupervisor(zerolog.New(&logs))
	started := make(chan struct{})
	s.Add("busy", func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return fmt.Errorf("after reload: %w", ctx.Err())
	})
	s.Start(context.Background())
	<-started
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("Stop = %v, want nil", err)
	}
	if strings.Contains(logs.String(), "failed") {
		t.Fatalf("a stopped job was logged as failed: %s", logs.String())
	}
}
