package esdb

import (
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/cgp-platform/cgp/eventlog"
)

func TestToPosition(t *testing.T) {
	cases := []struct {
		in      es.Position
		want    eventlog.Position
		wantErr bool
	}{
		{es.Position{Commit: 1788, Prepare: 1788}, 1788, false}, // self-committed event
		{es.Position{Commit: 5000, Prepare: 4711}, 4711, false}, // legacy transaction, commit record after
		{es.Position{Commit: 1 << 40, Prepare: 1 << 40}, 1 << 40, false},
		{es.Position{Commit: math.MaxUint64, Prepare: math.MaxUint64}, 0, true}, // -1: unknown
		{es.Position{Commit: 10, Prepare: math.MaxUint64}, 0, true},
		{es.Position{Commit: math.MaxInt64 + 1, Prepare: 10}, 0, true},
		{es.Position{}, 0, true}, // the client's "no position"
	}
	for _, tc := range cases {
		got, err := toPosition(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("toPosition(%+v) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestFromPosition(t *testing.T) {
	if got := fromPosition(1788); got != (es.Position{Commit: 1788, Prepare: 1788}) {
		t.Errorf("fromPosition(1788) = %#v, want the record at 1788", got)
	}
	// Round trip for self-committed events.
	for _, p := range []eventlog.Position{1, 1788, 1 << 50} {
		back, err := toPosition(fromPosition(p))
		if err != nil || back != p {
			t.Errorf("toPosition(fromPosition(%d)) = %d, %v", p, back, err)
		}
	}
	// Reads and subscriptions from 0 start at the beginning of the log,
	// from p at the record at p.
	if c := newCursor(0); c.from() != (es.Start{}) {
		t.Errorf("cursor after 0 starts at %#v, want Start", c.from())
	}
	if c := newCursor(1788); c.from() != fromPosition(1788) {
		t.Errorf("cursor after 1788 starts at %#v", c.from())
	}
}

func TestCursorAdmit(t *testing.T) {
	c := newCursor(0)
	if c.from() != (es.Start{}) {
		t.Fatalf("fresh cursor starts at %#v, want Start", c.from())
	}
	steps := []struct {
		p     es.Position
		isNew bool
	}{
		{es.Position{Commit: 100, Prepare: 100}, true},
		{es.Position{Commit: 100, Prepare: 100}, false}, // re-delivered
		{es.Position{Commit: 250, Prepare: 250}, true},
		{es.Position{Commit: 120, Prepare: 120}, false}, // older
		{es.Position{Commit: 400, Prepare: 400}, true},
	}
	for i, s := range steps {
		pos, isNew, err := c.admit(s.p)
		if err != nil || isNew != s.isNew || pos != s.p.Prepare {
			t.Fatalf("step %d: admit(%+v) = %d, %v, %v; want %d, %v", i, s.p, pos, isNew, err, s.p.Prepare, s.isNew)
		}
	}
	if c.from() != (es.Position{Commit: 400, Prepare: 400}) {
		t.Errorf("resumes from %#v, want the last admitted event", c.from())
	}
	if _, _, err := c.admit(es.Position{Commit: math.MaxUint64, Prepare: math.MaxUint64}); err == nil {
		t.Error("unknown position admitted")
	}

	c = newCursor(250)
	if c.from() != (es.Position{Commit: 250, Prepare: 250}) {
		t.Errorf("cursor after 250 starts at %#v", c.from())
	}
	if _, isNew, _ := c.admit(es.Position{Commit: 250, Prepare: 250}); isNew {
		t.Error("the start event itself (returned by an inclusive read) admitted")
	}
	if _, isNew, _ := c.admit(es.Position{Commit: 251, Prepare: 251}); !isNew {
		t.Error("the event after the start not admitted")
	}
}

func TestCursorRetreat(t *testing.T) {
	// A position inside the first chunk: back to the log start at once.
	c := newCursor(4711)
	if !c.retreat() || c.from() != (es.Start{}) {
		t.Fatalf("retreat from 4711 gives %#v, want Start", c.from())
	}
	if c.retreat() {
		t.Error("retreat beyond the log start")
	}
	// Skipped events at or before the caller's position pin the cursor.
	for _, p := range []uint64{1000, 4700} {
		if _, isNew, _ := c.admit(es.Position{Commit: p, Prepare: p}); isNew {
			t.Errorf("event at %d before the start 4711 admitted", p)
		}
	}
	if c.from() != (es.Position{Commit: 4700, Prepare: 4700}) || c.retreat() {
		t.Errorf("after seeing real records the cursor is at %#v and may retreat", c.from())
	}
	if _, isNew, _ := c.admit(es.Position{Commit: 4800, Prepare: 4800}); !isNew {
		t.Error("event after the start not admitted")
	}

	// A position in a later chunk: its chunk's start first, then the log's.
	far := eventlog.Position(3*chunkSize + 12345)
	c = newCursor(far)
	if c.from() != (es.Position{Commit: far, Prepare: far}) {
		t.Fatalf("starts at %#v", c.from())
	}
	if !c.retreat() || c.from() != (es.Position{Commit: 3 * chunkSize, Prepare: 3 * chunkSize}) {
		t.Fatalf("first retreat gives %#v, want the chunk start", c.from())
	}
	if !c.retreat() || c.from() != (es.Start{}) {
		t.Fatalf("second retreat gives %#v, want Start", c.from())
	}
	if c.retreat() {
		t.Error("third retreat allowed")
	}
	// Nothing to retreat from: no start, or a verified one.
	if c := newCursor(0); c.retreat() {
		t.Error("cursor at the log start retreats")
	}
	c = newCursor(0)
	_, _, _ = c.admit(es.Position{Commit: 9, Prepare: 9})
	if c.retreat() {
		t.Error("cursor at a reported record retreats")
	}
}

// simulatedEvent is one event of a simulated $all.
type simulatedEvent struct{ pos es.Position }

// simulateLog builds a $all of n events in server order: self-committed
// events at (p, p) and, when legacy, explicit transactions whose events
// share the position of a commit record written after them.
func simulateLog(rng *rand.Rand, n int, legacy bool) []simulatedEvent {
	var out []simulatedEvent
	offset := uint64(1000)
	for len(out) < n {
		if legacy && rng.IntN(3) == 0 {
			k := 1 + rng.IntN(4)
			var prepares []uint64
			for range k {
				prepares = append(prepares, offset)
				offset += 50 + uint64(rng.IntN(200))
			}
			commit := offset // the commit record
			offset += 40
			for _, p := range prepares {
				out = append(out, simulatedEvent{es.Position{Commit: commit, Prepare: p}})
			}
			continue
		}
		out = append(out, simulatedEvent{es.Position{Commit: offset, Prepare: offset}})
		offset += 50 + uint64(rng.IntN(500))
	}
	return out[:n]
}

// serve returns what the server sends from `from`: with inclusive (a read
// forwards) every event at or after it, otherwise (a subscription) every
// event after it, in $all order. A legacy transaction is served whole when
// its commit record lies after the start, as the server's reader does.
func serve(log []simulatedEvent, from es.AllPosition, inclusive bool) []es.Position {
	var out []es.Position
	for _, e := range log {
		switch f := from.(type) {
		case es.Start:
			out = append(out, e.pos)
		case es.Position:
			if tfLess(f, e.pos) || (inclusive && e.pos == f) {
				out = append(out, e.pos)
			}
		}
	}
	return out
}

func TestPositionMappingResumesExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, legacy := range []bool{false, true} {
		log := simulateLog(rng, 200, legacy)
		if !sort.SliceIsSorted(log, func(i, j int) bool { return tfLess(log[i].pos, log[j].pos) }) {
			t.Fatal("simulated log not in $all order")
		}
		mapped := make([]eventlog.Position, len(log))
		for i, e := range log {
			p, err := toPosition(e.pos)
			if err != nil {
				t.Fatal(err)
			}
			mapped[i] = p
			if i > 0 && p <= mapped[i-1] {
				t.Fatalf("legacy=%v: Position %d of event %d not above %d", legacy, p, i, mapped[i-1])
			}
		}
		// Resuming after every event, by subscription or by read, yields
		// exactly the events after it.
		for i := -1; i < len(log); i++ {
			after := eventlog.Position(0)
			if i >= 0 {
				after = mapped[i]
			}
			for _, inclusive := range []bool{false, true} {
				c := newCursor(after)
				var got []eventlog.Position
				for _, p := range serve(log, c.from(), inclusive) {
					pos, isNew, err := c.admit(p)
					if err != nil {
						t.Fatal(err)
					}
					if isNew {
						got = append(got, pos)
					}
				}
				want := mapped[i+1:]
				if len(want) == 0 {
					want = nil
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("legacy=%v, inclusive=%v: resuming after event %d gave %v, want %v", legacy, inclusive, i, got, want)
				}
			}
		}
		// And a subscription dropped anywhere resumes from the cursor without
		// gap or duplicate.
		c := newCursor(0)
		var got []eventlog.Position
		for len(got) < len(log) {
			for j, p := range serve(log, c.from(), false) {
				if j == 7 { // drop after a few events
					break
				}
				pos, isNew, err := c.admit(p)
				if err != nil {
					t.Fatal(err)
				}
				if isNew {
					got = append(got, pos)
				}
			}
		}
		if !reflect.DeepEqual(got, mapped) {
			t.Fatalf("legacy=%v: dropped and resumed subscription delivered %v, want %v", legacy, got, mapped)
		}
	}
}
