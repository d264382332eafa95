package attribution_test

import (
	"encoding/json"
	"flag"
	"reflect"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/internal/goldenshop"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/attribution"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestReadModelMatchesGoldenAndReplay: every commerce topic's fixture
// (checkouts, orders, refunds among them) builds the read model in
// testdata/attribution.golden.json while the projector follows the log
// live, and a rebuild from position 0 gives the same rows.
func TestReadModelMatchesGoldenAndReplay(t *testing.T) {
	clock := time.Date(2026, 3, 20, 9, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { return clock })
	live := core.ReadSide(t, attribution.Projector(core.Codec))
	last := goldenshop.DeliverAll(t, core)
	live.WaitFor(t, last)
	got := dumpAll(t, live)
	if len(got["attribution_credits"]) == 0 || len(got["touchpoints"]) == 0 {
		t.Fatalf("the fixtures gave no credits or touchpoints: %v", got)
	}
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Golden(t, "testdata/attribution.golden.json", b, *update)

	rebuilt := core.ReadSide(t, attribution.Projector(core.Codec))
	rebuilt.WaitFor(t, last)
	if again := dumpAll(t, rebuilt); !reflect.DeepEqual(got, again) {
		b2, _ := json.MarshalIndent(again, "", "  ")
		t.Fatalf("the rebuilt read model differs from the live one:\n%s", b2)
	}
}
