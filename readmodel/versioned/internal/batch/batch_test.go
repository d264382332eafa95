package batch_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/readmodel/versioned/internal/batch"
)

type recorder struct {
	fail   bool
	sent   []*batch.Batch
	saved  [][]batch.Checkpoint
	events []string
}

func (r *recorder) Send(_ context.Context, b *batch.Batch) error {
	if r.fail {
		r.events = append(r.events, "send-failed "+b.Table)
		return errors.New("down")
	}
	r.sent = append(r.sent, b)
	r.events = append(r.events, "send "+b.Table)
	return nil
}

func (r *recorder) SaveCheckpoints(_ context.Context, cps []batch.Checkpoint) error {
	r.saved = append(r.saved, cps)
	r.events = append(r.events, "checkpoints")
	return nil
}

func entry(table string, v int64) batch.Entry {
	return batch.Entry{Table: table, Row: versioned.Row{Values: []any{v}, Version: uint64(v)}}
}

func TestCheckpointsFollowSentBatchesInWriteOrder(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(0, 0)
	r := &recorder{}
	b := batch.New(batch.Config{MaxRows: 2, MaxDelay: time.Minute, Now: func() time.Time { return now }}, r)
	b.Add("p", 1, []batch.Entry{entry("a", 1)})
	b.Add("p", 2, []batch.Entry{entry("b", 2), entry("b", 2)}) // b full: sealed
	b.Add("p", 3, nil)
	b.Add("q", 4, []batch.Entry{entry("b", 4)})
	if err := b.FlushDue(ctx); err != nil {
		t.Fatal(err)
	}
	// b's full batch went out, but p's write 1 (in a's open batch) did
	// not: p's checkpoint may not move.
	if len(r.sent) != 1 || r.sent[0].Table != "b" || r.sent[0].First != 2 || r.sent[0].Last != 2 || len(r.saved) != 0 {
		t.Fatalf("sent %d batches, saved %v", len(r.sent), r.saved)
	}
	now = now.Add(time.Minute)
	if err := b.FlushDue(ctx); err != nil {
		t.Fatal(err)
	}
	want := []batch.Checkpoint{{Projector: "p", Position: 3}, {Projector: "q", Position: 4}}
	if len(r.saved) != 1 || !slices.Equal(r.saved[0], want) {
		t.Fatalf("saved %v, want %v", r.saved, want)
	}
	if got := r.events[len(r.events)-1]; got != "checkpoints" {
		t.Fatalf("last event %q: checkpoints must follow the sends (%v)", got, r.events)
	}
	if b.Queued() != 0 {
		t.Fatalf("queued %d", b.Queued())
	}
}

func TestFailedSendKeepsBatchSealed(t *testing.T) {
	ctx := context.Background()
	r := &recorder{fail: true}
	b := batch.New(batch.Config{}, r)
	b.Add("p", 1, []batch.Entry{entry("a", 1)})
	if err := b.Flush(ctx); err == nil {
		t.Fatal("flush succeeded")
	}
	b.Add("p", 2, []batch.Entry{entry("a", 2)}) // goes to a new batch
	r.fail = false
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(r.sent) != 2 || len(r.sent[0].Rows) != 1 || r.sent[0].Last != 1 || r.sent[1].First != 2 {
		t.Fatalf("sent %+v; want the failed batch unchanged, then the new one", r.sent)
	}
	if r.sent[0].Token == r.sent[1].Token {
		t.Fatal("two batches share a token")
	}
	if len(r.saved) != 1 || r.saved[0][0].Position != 2 {
		t.Fatalf("saved %v, want p at 2 once", r.saved)
	}
}

func TestSealToken(t *testing.T) {
	rows := []versioned.Row{{Values: []any{"a", int64(1), 2.5}, Version: 3}}
	a, b := batch.Seal("t", rows, 3, 3), batch.Seal("t", slices.Clone(rows), 3, 3)
	if a.Token != b.Token {
		t.Fatal("same content, different tokens")
	}
	for _, other := range []*batch.Batch{
		batch.Seal("u", rows, 3, 3),
		batch.Seal("t", rows, 2, 3),
		batch.Seal("t", []versioned.Row{{Values: []any{"a", int64(1), 2.5}, Version: 3, Deleted: true}}, 3, 3),
		batch.Seal("t", []versioned.Row{{Values: []any{"b", int64(1), 2.5}, Version: 3}}, 3, 3),
	} {
		if other.Token == a.Token {
			t.Fatalf("different batch, same token %s", a.Token)
		}
	}
}
