package logutil

import (
	"fmt"
	"math"
	"testing"

	"github.com/cgp-platform/cgp/eventlog"
)

func TestPositionChunks(t *testing.T) {
	got := PositionChunks([]eventlog.Position{5, 1, 3, 5, 2, math.MaxUint64}, 2)
	if fmt.Sprint(got) != fmt.Sprintf("[[1 2] [3 5] [%d]]", int64(math.MaxInt64)) {
		t.Fatalf("chunks %v", got)
	}
	if PositionChunks(nil, 2) != nil {
		t.Fatal("chunks of nothing")
	}
}
