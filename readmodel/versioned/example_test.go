package versioned_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/readmodel/versioned/sqlite"
)

// A projector writes whole rows versioned by the log position; they are
// readable, and its checkpoint moves, once flushed.
func Example() {
	dir, _ := os.MkdirTemp("", "versioned")
	defer os.RemoveAll(dir)
	s, err := sqlite.Open(sqlite.Config{Path: filepath.Join(dir, "warehouse.db"), MaxDelay: time.Hour})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx := context.Background()
	_ = s.Migrate(ctx, []versioned.Table{orders})

	row := func(revenue int64) []versioned.Change {
		return []versioned.Change{{Table: "orders", Row: versioned.Row{Values: []any{"o1", "s1", "a@example.com", revenue}}}}
	}
	_ = s.Write(ctx, "attribution", 41, row(1000))
	_ = s.Write(ctx, "attribution", 42, row(900)) // a refund: newer version
	cp, _ := s.Checkpoint(ctx, "attribution")
	fmt.Println("checkpoint before flush:", cp)

	_ = s.Flush(ctx)
	cp, _ = s.Checkpoint(ctx, "attribution")
	r, found, _ := s.Get(ctx, "orders", []any{"s1", "o1"})
	fmt.Println("checkpoint after flush:", cp, "found:", found, "revenue:", r.Values[3], "version:", r.Version)

	_ = s.Erase(ctx, "orders", []any{"s1"}, 43)
	_, found, _ = s.Get(ctx, "orders", []any{"s1", "o1"})
	fmt.Println("after erasure found:", found)
	// Output:
	// checkpoint before flush: 0
	// checkpoint after flush: 42 found: true revenue: 900 version: 42
	// after erasure found: false
}
