package replay

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress is told how far a replay is: done of total events (total grows
// while the log does), then Done once.
type Progress interface {
	Update(done, total uint64)
	Done()
}

// NewBar returns a progress bar for a terminal: events, events/s and the
// time left.
func NewBar(w io.Writer) Progress {
	return &bar{b: progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("replay"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("events"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionFullWidth(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)}
}

type bar struct {
	b     *progressbar.ProgressBar
	total uint64
}

func (b *bar) Update(done, total uint64) {
	if total != b.total {
		b.total = total
		b.b.ChangeMax64(int64(total))
	}
	_ = b.b.Set64(int64(done))
}

func (b *bar) Done() { _ = b.b.Finish() }

// NewLines returns progress for logs and pipes: one plain line every
// interval (and a last one), with events/s and the time left.
func NewLines(w io.Writer, every time.Duration) Progress {
	return NewReports(every, func(s Status) {
		fmt.Fprintf(w, "replay: %d/%d events (%.1f%%), %.0f events/s, %s left\n", s.Done, s.Total, s.Percent, s.Rate, s.Left)
	})
}

// Status is how far a replay is at one moment.
type Status struct {
	Done, Total uint64
	// Rate is the events per second since the start; Percent is Done of
	// Total; Left is the time left at Rate ("unknown" before any event).
	Rate, Percent float64
	Left          string
	// Final is set on the last report (Done was called).
	Final bool
}

// NewReports returns progress handed to report every interval (and once
// at the end).
func NewReports(every time.Duration, report func(Status)) Progress {
	return &lines{report: report, every: every, start: time.Now()}
}

type lines struct {
	report      func(Status)
	every       time.Duration
	start, last time.Time
	done, total uint64
}

func (l *lines) Update(done, total uint64) {
	l.done, l.total = done, total
	if now := time.Now(); now.Sub(l.last) >= l.every {
		l.last = now
		l.print(false)
	}
}

func (l *lines) Done() { l.print(true) }

func (l *lines) print(final bool) {
	s := Status{Done: l.done, Total: l.total, Percent: 100, Left: "unknown", Final: final}
	if elapsed := time.Since(l.start).Seconds(); elapsed > 0 {
		s.Rate = float64(l.done) / elapsed
	}
	if l.total > 0 {
		s.Percent = 100 * float64(l.done) / float64(l.total)
	}
	if s.Rate > 0 {
		s.Left = (time.Duration(float64(l.total-min(l.done, l.total))/s.Rate) * time.Second).Round(time.Second).String()
	}
	l.report(s)
}
