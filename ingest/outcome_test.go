package ingest_test

import (
	"errors"
	"testing"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest"
)

func TestOutcome(t *testing.T) {
	at := func(pos uint64) commands.Result { return commands.Result{Position: pos} }
	invalid, missing := domain.Invalid("statuses.id", "required"), domain.NotFound("shop")
	down := errors.New("log unavailable")
	for _, c := range []struct {
		name    string
		results []error // nil: a result at the next position
		want    error
		wantPos uint64
		stopped bool
	}{
		{"all recorded: the furthest result", []error{nil, nil, nil}, nil, 3, false},
		{"a part that does not fit: the first client error, after the others", []error{nil, invalid, missing, nil}, invalid, 0, false},
		{"a part not mapped", []error{nil, ingest.ErrUnhandled, nil}, ingest.ErrUnhandled, 0, false},
		{"a client error wins over an unmapped part", []error{ingest.ErrUnhandled, missing}, missing, 0, false},
		{"the log fails: stop at once", []error{nil, down}, nil, 0, true},
	} {
		var o ingest.Outcome
		stopped := false
		for i, err := range c.results {
			res := commands.Result{}
			if err == nil {
				res = at(uint64(i + 1))
			}
			if got := o.Add(res, err); got != nil {
				if !errors.Is(got, down) {
					t.Fatalf("%s: Add returned %v", c.name, got)
				}
				stopped = true
				break
			}
		}
		if stopped != c.stopped {
			t.Fatalf("%s: stopped %v, want %v", c.name, stopped, c.stopped)
		}
		if stopped {
			continue
		}
		res, err := o.Result()
		if !errors.Is(err, c.want) || (c.want == nil && err != nil) || res.Position != c.wantPos {
			t.Errorf("%s: %+v %v, want position %d and %v", c.name, res, err, c.wantPos, c.want)
		}
	}
}
