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
	return &lines{w: w, every: every, start: time.Now()}
}

type lines struct {
	w           io.Writer
	every       time.Duration
	start, last time.Time
	done, total uint64
}

func (l *lines) Update(done, total uint64) {
	l.done, l.total = done, total
	if now := time.Now(); now.Sub(l.last) >= l.every {
		l.last = now
		l.print()
	}
}

func (l *lines) Done() { l.print() }

func (l *lines) print() {
	elapsed := time.Since(l.start).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(l.done) / elapsed
	}
	pct := 100.0
	if l.total > 0 {
		pct = 100 * float64(l.done) / float64(l.total)
	}
	left := "unknown"
	if rate > 0 {
		left = (time.Duration(float64(l.total-min(l.done, l.total))/rate) * time.Second).Round(time.Second).String()
	}
	fmt.Fprintf(l.w, "replay: %d/%d events (%.1f%%), %.0f events/s, %s left\n", l.done, l.total, pct, rate, left)
}
