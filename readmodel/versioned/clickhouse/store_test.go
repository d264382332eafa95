package clickhouse_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/readmodel/versioned/clickhouse"
	"github.com/cgp-platform/cgp/readmodel/versioned/versionedtest"
)

// open makes a store in a new database of the server at
// CGP_CLICKHOUSE_URL, dropped when the test ends.
func open(t *testing.T) versioned.Store {
	t.Helper()
	raw := os.Getenv("CGP_CLICKHOUSE_URL")
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal("CGP_CLICKHOUSE_URL is not a URL")
	}
	opts, err := ch.ParseDSN(raw)
	if err != nil {
		t.Fatal("CGP_CLICKHOUSE_URL is not a ClickHouse URL")
	}
	admin, err := ch.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	db := "cgp_test_" + hex.EncodeToString(suffix[:])
	ctx := context.Background()
	if err := admin.Exec(ctx, "CREATE DATABASE `"+db+"`"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() { _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS `"+db+"`") })
	u.Path = "/" + db
	s, err := clickhouse.Open(ctx, clickhouse.Config{URL: u.String(), MaxDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestContract(t *testing.T) {
	if os.Getenv("CGP_CLICKHOUSE_URL") == "" {
		t.Skip("CGP_CLICKHOUSE_URL not set: the ClickHouse contract suite needs a server (docker compose up, then CGP_CLICKHOUSE_URL=clickhouse://cgp:cgp@127.0.0.1:9000/cgp)")
	}
	versionedtest.Run(t, open)
}
