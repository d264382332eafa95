package sqlite_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/idempotency/sqlite"
)

func TestDeleteScopes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(sqlite.Config{Path: filepath.Join(dir, "idempotency.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fp := idempotency.Fingerprint("PATCH", "/x", nil)
	for _, scope := range []string{"tok_gone", "tok_kept"} {
		c, err := st.Begin(ctx, scope, "k1", fp)
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(`{"email":"` + scope + `@example.org"}`)
		if err := st.Complete(ctx, c, idempotency.Response{Status: 200, Header: http.Header{}, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DeleteScopes(ctx, []string{"tok_gone", "tok_never_used"}); err != nil {
		t.Fatal(err)
	}
	if c, err := st.Begin(ctx, "tok_gone", "k1", fp); err != nil || c.Outcome != idempotency.Started {
		t.Fatalf("deleted scope: %+v %v", c, err)
	}
	if c, err := st.Begin(ctx, "tok_kept", "k1", fp); err != nil || c.Outcome != idempotency.Replay {
		t.Fatalf("kept scope: %+v %v", c, err)
	}
	// The deleted body is in no byte of the files (WAL truncated, freed
	// cells zeroed).
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("tok_gone@example.org")) {
			t.Fatalf("deleted response left in %s", e.Name())
		}
	}
}
