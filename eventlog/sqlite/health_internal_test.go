package sqlite

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/cgp-platform/cgp/eventlog"
)

// TestWriteHealthFollowsAFullDatabase (point 14 of issue 14): once the
// database cannot grow (SQLite's own max_page_count limit: appends fail
// with SQLITE_FULL, as on a full disk), WriteHealth reports the failure,
// probing with a real write each time; once the file may grow again it
// reports healthy and appends succeed. A wrong expected revision is a
// client's error and leaves the log healthy.
func TestWriteHealthFollowsAFullDatabase(t *testing.T) {
	l, err := Open(Config{Path: filepath.Join(t.TempDir(), "events.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	if _, err := l.Append(ctx, "s-1", eventlog.NoStream(), testEvent("A")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, "s-1", eventlog.NoStream(), testEvent("A")); !errors.Is(err, eventlog.ErrWrongExpectedRevision) {
		t.Fatalf("second NoStream append: %v", err)
	}
	if err := l.WriteHealth(ctx); err != nil {
		t.Fatalf("healthy log: %v", err)
	}
	l.SetMaxPages(1) // SQLite keeps the current size: no page may be added
	var full error
	for i := 0; i < 1000 && full == nil; i++ {
		e := testEvent("Big")
		e.Data = bytes.Repeat([]byte("x"), 2048)
		_, full = l.Append(ctx, "big-1", eventlog.Any(), e)
	}
	var se sqlite3.Error
	if !errors.Is(full, eventlog.ErrUnavailable) || !errors.As(full, &se) || se.Code != sqlite3.ErrFull {
		t.Fatalf("append into a full database: %v, want ErrUnavailable wrapping SQLITE_FULL", full)
	}
	for range 2 {
		if err := l.WriteHealth(ctx); !errors.Is(err, eventlog.ErrUnavailable) {
			t.Fatalf("write health while full: %v", err)
		}
	}
	l.SetMaxPages(0)
	if err := l.WriteHealth(ctx); err != nil {
		t.Fatalf("write health once the database may grow: %v", err)
	}
	if _, err := l.Append(ctx, "big-1", eventlog.Any(), testEvent("After")); err != nil {
		t.Fatalf("append after recovery: %v", err)
	}
	if err := l.WriteHealth(ctx); err != nil {
		t.Fatal(err)
	}
}
