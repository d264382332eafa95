package eventlogtest

import (
	"context"
	"testing"

	"github.com/cgp-platform/cgp/eventlog"
)

// RunPositionReader checks a log's eventlog.PositionReader: events come
// back by position, in position order, once each, equal to what ReadAll
// returns; positions holding none of the log's events are left out.
func RunPositionReader(t *testing.T, open func(t *testing.T) eventlog.Log) {
	l := open(t)
	pr, ok := l.(eventlog.PositionReader)
	if !ok {
		t.Fatalf("%T does not implement eventlog.PositionReader", l)
	}
	ctx := context.Background()
	for i := range 30 {
		mustAppend(t, l, "pos-"+string(rune('a'+i%3)), eventlog.Any(), events(1+i%2, "Pos")...)
	}
	all := readAll(t, l)
	if len(all) < 40 {
		t.Fatalf("%d events in the log", len(all))
	}
	// Every third event, asked for in reverse order and twice.
	var ask []eventlog.Position
	var want []eventlog.Event
	for i := len(all) - 1; i >= 0; i -= 3 {
		ask = append(ask, all[i].Position, all[i].Position)
	}
	for i := range all {
		if (len(all)-1-i)%3 == 0 {
			want = append(want, all[i])
		}
	}
	got, err := pr.ReadPositions(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("ReadPositions returned %d events, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Position != w.Position || g.ID != w.ID || g.StreamID != w.StreamID || g.Revision != w.Revision ||
			g.Type != w.Type || string(g.Data) != string(w.Data) || string(g.Hash) != string(w.Hash) ||
			string(g.PrevHash) != string(w.PrevHash) || !g.RecordedAt.Equal(w.RecordedAt) || g.Metadata.Actor != w.Metadata.Actor {
			t.Fatalf("event %d: got %+v, want %+v", i, g, w)
		}
	}
	// Positions between and beyond the events, and none at all.
	last := all[len(all)-1].Position
	got, err = pr.ReadPositions(ctx, []eventlog.Position{0, last + 1, last + 1000, all[0].Position})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != all[0].ID {
		t.Fatalf("positions without events: %+v", got)
	}
	if got, err := pr.ReadPositions(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("no positions: %v, %v", got, err)
	}
}
