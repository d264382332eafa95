package sqlite_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/readmodel/versioned/versionedtest"
)

// BenchmarkWriteFlush measures rows per second through Write and Flush in
// batches of 1,000 rows (one transaction each).
func BenchmarkWriteFlush(b *testing.B) {
	s := openB(b)
	ctx := context.Background()
	if err := s.Migrate(ctx, []versioned.Table{versionedtest.Orders}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c := versioned.Change{Table: versionedtest.Orders.Name, Row: versioned.Row{
			Values: []any{fmt.Sprintf("shop_%d", i%10), fmt.Sprintf("ord_%09d", i), "e", int64(i), 0.5}}}
		if err := s.Write(ctx, "p", uint64(i+1), []versioned.Change{c}); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 {
			if err := s.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}
