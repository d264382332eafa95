package projections_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
)

func TestTxCasesNameTheirTypesAndDispatch(t *testing.T) {
	var applied []string
	failed := errors.New("disk full")
	cases := projections.NewTxCases(
		projections.OnTx(func(_ context.Context, _ *sql.Tx, ev *domain.CustomerTagsSet, e *projections.DecodedEvent) error {
			applied = append(applied, "tags "+ev.CustomerID+" at "+e.StreamID)
			return nil
		}),
		projections.OnTx(func(_ context.Context, _ *sql.Tx, ev *domain.RefundRecorded, _ *projections.DecodedEvent) error {
			applied = append(applied, "refund "+ev.RefundID)
			return failed
		}),
	)
	if got := cases.Types(); !slices.Equal(got, []string{"CustomerTagsSet", "RefundRecorded"}) {
		t.Fatalf("Types() = %v", got)
	}
	apply := projections.WrapErrors("test", cases.Apply)
	run := func(stream string, ev domain.Event) error {
		e := eventlog.Event{StreamID: stream, EventData: eventlog.EventData{Type: ev.EventType()}}
		return apply(context.Background(), nil, &e, envelope.Decoded{Event: ev})
	}
	if err := run("s1", &domain.CustomerTagsSet{CustomerID: "cus_1"}); err != nil {
		t.Fatal(err)
	}
	if err := run("s2", &domain.RefundRecorded{RefundID: "rf1"}); !errors.Is(err, failed) || err.Error() != "test RefundRecorded: disk full" {
		t.Fatalf("the failing case returned %v", err)
	}
	if err := run("s3", &domain.OrderRecorded{OrderID: "o1"}); err != nil {
		t.Fatalf("an event without a case: %v", err)
	}
	if want := []string{"tags cus_1 at s1", "refund rf1"}; !slices.Equal(applied, want) {
		t.Fatalf("applied %v, want %v", applied, want)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("two cases of one type were accepted")
		}
	}()
	projections.NewTxCases(
		projections.OnTx(func(context.Context, *sql.Tx, *domain.RefundRecorded, *projections.DecodedEvent) error { return nil }),
		projections.OnTx(func(context.Context, *sql.Tx, *domain.RefundRecorded, *projections.DecodedEvent) error { return nil }),
	)
}
