package readmodel_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

func TestTimeReadsWhatMicrosWrites(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 123456000, time.FixedZone("x", 3600))
	if got := readmodel.Time(readmodel.Micros(at)); !got.Equal(at) || got.Location() != time.UTC {
		t.Fatalf("round trip of %v: %v", at, got)
	}
	var zero time.Time
	for _, us := range []int64{readmodel.Micros(zero), zero.UnixMicro()} {
		if got := readmodel.Time(us); !got.IsZero() {
			t.Errorf("Time(%d) = %v, want the zero time", us, got)
		}
	}
	if readmodel.Micros(zero) != 0 {
		t.Errorf("Micros(zero) = %d", readmodel.Micros(zero))
	}
	if got := readmodel.NullTime(sql.NullInt64{}); !got.IsZero() {
		t.Errorf("NullTime(NULL) = %v", got)
	}
	if got := readmodel.NullTime(sql.NullInt64{Int64: readmodel.Micros(at), Valid: true}); !got.Equal(at) {
		t.Errorf("NullTime = %v", got)
	}
}

func TestJSONText(t *testing.T) {
	var none []string
	for _, c := range []struct {
		v    any
		want string
	}{{none, "[]"}, {nil, "{}"}, {[]string{"a"}, `["a"]`}, {map[string]int{"a": 1}, `{"a":1}`}, {func() {}, "[]"}} {
		empty := "[]"
		if c.want == "{}" {
			empty = "{}"
		}
		if got := readmodel.JSONText(c.v, empty); got != c.want {
			t.Errorf("JSONText(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestNullIfEmpty(t *testing.T) {
	if v := readmodel.NullIfEmpty(""); v != nil {
		t.Errorf("empty: %#v", v)
	}
	if v := readmodel.NullIfEmpty("a@example.com"); v != "a@example.com" {
		t.Errorf("value: %#v", v)
	}
}

func TestFindError(t *testing.T) {
	if err := readmodel.FindError(nil, "order"); err != nil {
		t.Fatalf("nil: %v", err)
	}
	if err := readmodel.FindError(sql.ErrNoRows, "order"); domain.ErrorCode(err) != domain.CodeNotFound || !strings.Contains(err.Error(), "order") {
		t.Fatalf("no rows: %v", err)
	}
	cause := errors.New("disk I/O error")
	if err := readmodel.FindError(cause, "order"); !errors.Is(err, cause) || domain.ErrorCode(err) == domain.CodeNotFound ||
		!strings.Contains(err.Error(), "find order") {
		t.Fatalf("other: %v", err)
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	store, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(t.TempDir(), "rm.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx, "list", []readmodel.Migration{{Version: 1, SQL: `CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`}}); err != nil {
		t.Fatal(err)
	}
	scan := func(s readmodel.Scanner) (string, error) {
		var name string
		err := s.Scan(&name)
		return name, err
	}
	const query = `SELECT name FROM items WHERE id > ? ORDER BY id`
	if got, err := readmodel.List(ctx, store.DB(), "items", scan, query, 0); err != nil || got != nil {
		t.Fatalf("no rows: %v %v", got, err)
	}
	if _, err := store.Apply(ctx, "list", 1, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO items (id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c')`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := readmodel.List(ctx, store.DB(), "items", scan, query, 1); err != nil || strings.Join(got, ",") != "b,c" {
		t.Fatalf("rows: %v %v", got, err)
	}
	if _, err := readmodel.List(ctx, store.DB(), "items", scan, `SELECT nope FROM items`); err == nil || !strings.Contains(err.Error(), "list items") {
		t.Fatalf("bad query: %v", err)
	}
	failing := func(readmodel.Scanner) (string, error) { return "", errors.New("scan failed") }
	if _, err := readmodel.List(ctx, store.DB(), "items", failing, query, 0); err == nil || !strings.Contains(err.Error(), "list items: scan failed") {
		t.Fatalf("failing scan: %v", err)
	}
}

func TestStrings(t *testing.T) {
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('b'), ('a'), ('c')`); err != nil {
		t.Fatal(err)
	}
	got, err := readmodel.Strings(ctx, db, `SELECT v FROM t WHERE v <> ? ORDER BY v`, "c")
	if err != nil || strings.Join(got, ",") != "a,b" {
		t.Fatalf("Strings = %v, %v", got, err)
	}
	if _, err := readmodel.Strings(ctx, db, `SELECT nope FROM t`); err == nil {
		t.Fatal("a bad query returned no error")
	}
}
