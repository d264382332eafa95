package gdprrequests_test

import (
	"context"
	"testing"

	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/audit"
	"github.com/cgp-platform/cgp/projections/gdprrequests"
)

// TestBuiltSaysWhetherTheTablesExist: a read-model version without the
// projector's tables (one the server never ran) is not built; one that
// migrated it is. Audit's Built is checked beside, on the same versions.
func TestBuiltSaysWhetherTheTablesExist(t *testing.T) {
	ctx := context.Background()
	core := testenv.New(t, nil)
	empty := core.ReadSide(t)
	built := core.ReadSide(t, gdprrequests.Projector(core.Codec, nil), audit.Projector())
	for _, c := range []struct {
		name string
		rs   *testenv.ReadSide
		want bool
	}{{"empty", empty, false}, {"migrated", built, true}} {
		if got, err := gdprrequests.NewQueries(c.rs.DB()).Built(ctx); err != nil || got != c.want {
			t.Errorf("%s: gdpr requests built %v (%v), want %v", c.name, got, err, c.want)
		}
		if got, err := audit.NewQueries(c.rs.DB()).Built(ctx); err != nil || got != c.want {
			t.Errorf("%s: audit index built %v (%v), want %v", c.name, got, err, c.want)
		}
	}
}
