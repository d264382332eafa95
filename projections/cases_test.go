package projections_test

import (
	"slices"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections"
)

func TestCasesNameTheirTypesAndDispatch(t *testing.T) {
	var folded []string
	cases := projections.NewCases(
		projections.On(func(s *[]string, ev *domain.CustomerTagsSet, _ *projections.DecodedEvent) {
			*s = append(*s, "tags "+ev.CustomerID)
		}),
		projections.On(func(s *[]string, ev *domain.RefundRecorded, e *projections.DecodedEvent) {
			*s = append(*s, "refund "+ev.RefundID+" at "+e.StreamID)
		}),
	)
	if got := cases.Types(); !slices.Equal(got, []string{"CustomerTagsSet", "RefundRecorded"}) {
		t.Fatalf("Types() = %v", got)
	}
	decoded := func(stream string, ev domain.Event) *projections.DecodedEvent {
		return &projections.DecodedEvent{Event: eventlog.Event{StreamID: stream, EventData: eventlog.EventData{Type: ev.EventType()}},
			Decoded: envelope.Decoded{Event: ev}}
	}
	if !cases.Apply(&folded, decoded("s1", &domain.RefundRecorded{RefundID: "rf1"})) ||
		!cases.Apply(&folded, decoded("s2", &domain.CustomerTagsSet{CustomerID: "cus_1"})) {
		t.Fatal("a case was not applied")
	}
	if cases.Apply(&folded, decoded("s3", &domain.OrderRecorded{OrderID: "o1"})) {
		t.Fatal("an event without a case was applied")
	}
	if want := []string{"refund rf1 at s1", "tags cus_1"}; !slices.Equal(folded, want) {
		t.Fatalf("folded %v, want %v", folded, want)
	}
}
