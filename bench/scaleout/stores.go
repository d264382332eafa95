package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// stores are the shared stores of one run: an event log and a key vault in
// PostgreSQL schemas of their own, Redis, and the master key every server
// and CLI call is given.
type stores struct {
	pgURL, redisURL, masterKey string
	logSchema, vaultSchema     string
}

// newStores names fresh random schemas for a run; they are created by the
// first process that opens them (the migrations run at start).
func newStores(pgURL, redisURL, masterKey string) (stores, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return stores{}, err
	}
	suffix := hex.EncodeToString(b)
	return stores{pgURL: pgURL, redisURL: redisURL, masterKey: masterKey,
		logSchema: "cgp_bench_log_" + suffix, vaultSchema: "cgp_bench_vault_" + suffix}, nil
}

// newMasterKey returns 32 random bytes in hex.
func newMasterKey() (string, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return "", err
	}
	return hex.EncodeToString(k), nil
}

func (s stores) logURL() string   { return withParam(s.pgURL, "search_path="+s.logSchema) }
func (s stores) vaultURL() string { return withParam(s.pgURL, "search_path="+s.vaultSchema) }

// env is the CGP_* environment that points the binary at the stores.
func (s stores) env() map[string]string {
	return map[string]string{
		"CGP_EVENT_LOG":        "postgres",
		"CGP_POSTGRES_LOG_URL": s.logURL(),
		"CGP_VAULT":            "postgres",
		"CGP_POSTGRES_URL":     s.vaultURL(),
		"CGP_REDIS_URL":        s.redisURL,
		"CGP_MASTER_KEY":       s.masterKey,
	}
}

// export sets the stores' CGP_* variables in this process's environment,
// which every CLI call and server started afterwards inherits: benchkit
// runs the binary with os.Environ().
func (s stores) export() error {
	for k, v := range s.env() {
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("set %s: %w", k, err)
		}
	}
	return nil
}

// drop removes the run's schemas.
func (s stores) drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.pgURL)
	if err != nil {
		return fmt.Errorf("drop the schemas: %w", err)
	}
	defer conn.Close(ctx)
	var errs []error
	for _, schema := range []string{s.logSchema, s.vaultSchema} {
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			errs = append(errs, fmt.Errorf("drop %s: %w", schema, err))
		}
	}
	return errors.Join(errs...)
}

// createdPerStream reads, from the run's event log in PostgreSQL, how many
// CustomerCreated events each stream holds.
func (s stores) createdPerStream(ctx context.Context) (map[string]int, error) {
	conn, err := pgx.Connect(ctx, s.pgURL)
	if err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT stream, count(*) FROM "+pgx.Identifier{s.logSchema, "events"}.Sanitize()+
		" WHERE type = $1 GROUP BY stream", customerCreated)
	if err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	counts := map[string]int{}
	var stream string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&stream, &n}, func() error {
		counts[stream] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	return counts, nil
}

// customerCreated is the stored type of the event a customers/create
// delivery of a new customer appends.
const customerCreated = "CustomerCreated"

// withParam returns url with one more query parameter.
func withParam(url, kv string) string {
	if strings.Contains(url, "?") {
		return url + "&" + kv
	}
	return url + "?" + kv
}
