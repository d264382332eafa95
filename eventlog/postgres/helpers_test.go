package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cgp-platform/cgp/eventlog/postgres"
)

// envURL names the server the tests use. They never skip: PostgreSQL runs
// on every development and CI machine.
const envURL = "CGP_TEST_POSTGRES_URL"

func testURL() string {
	if s := os.Getenv(envURL); s != "" {
		return s
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// connect returns an administrative connection, closed at cleanup.
func connect(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testURL())
	if err != nil {
		t.Fatalf("connect to PostgreSQL (set %s): %v", envURL, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// newSchema returns a schema name unique to this test and drops the schema
// when the test ends (after the logs opened in it are closed).
func newSchema(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "eventlog_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, testURL())
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// openLog opens a log in cfg.Schema (a new schema when empty) and closes
// it at cleanup.
func openLog(t testing.TB, cfg postgres.Config) *postgres.Log {
	t.Helper()
	if cfg.URL == "" {
		cfg.URL = testURL()
	}
	if cfg.Schema == "" {
		cfg.Schema = newSchema(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := postgres.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return l
}
