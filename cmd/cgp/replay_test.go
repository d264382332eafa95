package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/internal/sqlitedb"
	"github.com/cgp-platform/cgp/replay"
)

// projectorCount is how many projectors and reactors the server runs.
func projectorCount(t *testing.T) int {
	t.Helper()
	a := &App{Core: &Core{}}
	return len(allProjectors(a, func() {})) + len(allReactors(a))
}

// openVersion opens a read-model file read-only.
func openVersion(t *testing.T, path string) *sql.DB {
	t.Helper()
	db := sql.OpenDB(sqlitedb.Connector(path, "mode=ro", "PRAGMA busy_timeout = 5000;"))
	t.Cleanup(func() { db.Close() })
	return db
}

// waitAllProjected waits until every projector of the live version has
// reached the head of the log.
func waitAllProjected(t *testing.T, dir string) uint64 {
	t.Helper()
	head := uint64(len(readLog(t, dir)))
	path, err := replay.Current(dir)
	if err != nil {
		t.Fatal(err)
	}
	db := openVersion(t, path)
	n := projectorCount(t)
	eventually(t, 30*time.Second, fmt.Sprintf("every projector reaches %d", head), func() bool {
		var count int
		var low uint64
		err := db.QueryRow(`SELECT COUNT(*), COALESCE(MIN(position), 0) FROM _projector_checkpoints`).Scan(&count, &low)
		return err == nil && count == n && low >= head
	})
	return head
}

// snapshot copies the live read models of a stopped server.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	path, err := replay.Current(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "incremental.db")
	if _, err := openVersion(t, path).Exec(`VACUUM INTO ?`, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// volatile are the columns that record when, not what: left out of the
// comparison.
var volatile = map[string][]string{
	"_projector_checkpoints": {"updated_at"},
	"_projector_migrations":  {"applied_at"},
	"_projector_parked":      {"parked_at"},
}

// compareVersions fails unless the two read-model files hold the same
// tables, indexes and rows, row for row.
func compareVersions(t *testing.T, got, want string) {
	t.Helper()
	db := sql.OpenDB(sqlitedb.Connector(got, "mode=ro", ""))
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`ATTACH DATABASE ? AS want`, "file:"+want+"?mode=ro"); err != nil {
		t.Fatal(err)
	}
	schema := func(prefix string) []string {
		rows, err := db.Query(`SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM ` + prefix + `.sqlite_master ORDER BY type, name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	gs, ws := schema("main"), schema("want")
	if !slices.Equal(gs, ws) {
		t.Fatalf("schemas differ:\nreplayed %v\nincremental %v", gs, ws)
	}
	tables := 0
	for _, obj := range gs {
		f := strings.Fields(obj)
		if f[0] != "table" || strings.HasPrefix(f[1], "sqlite_") {
			continue
		}
		name := f[1]
		cols := columnsOf(t, db, name, volatile[name])
		var n, missing, extra int
		q := fmt.Sprintf(`SELECT (SELECT COUNT(*) FROM main.%[1]q), (SELECT COUNT(*) FROM (SELECT %[2]s FROM want.%[1]q EXCEPT SELECT %[2]s FROM main.%[1]q)),
			(SELECT COUNT(*) FROM (SELECT %[2]s FROM main.%[1]q EXCEPT SELECT %[2]s FROM want.%[1]q))`, name, cols)
		if err := db.QueryRow(q).Scan(&n, &missing, &extra); err != nil {
			t.Fatalf("compare %s: %v", name, err)
		}
		var wn int
		if err := db.QueryRow(fmt.Sprintf(`SELECT COUNT(*) FROM want.%q`, name)).Scan(&wn); err != nil {
			t.Fatal(err)
		}
		if missing != 0 || extra != 0 || n != wn {
			t.Errorf("table %s: replayed %d rows, incremental %d; %d missing, %d extra", name, n, wn, missing, extra)
		}
		tables++
	}
	if tables < 10 {
		t.Fatalf("only %d tables compared", tables)
	}
}

func columnsOf(t *testing.T, db *sql.DB, table string, skip []string) string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(skip, c) {
			cols = append(cols, fmt.Sprintf("%q", c))
		}
	}
	return strings.Join(cols, ", ")
}

// replayCLI runs cgp replay and returns its result and its progress lines.
func replayCLI(t *testing.T, dir string, args ...string) (map[string]any, string) {
	t.Helper()
	var out, errb bytes.Buffer
	args = append([]string{"replay", "--data-dir", dir, "--progress", "lines"}, args...)
	if code := Run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("cgp %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("replay output %q: %v", out.String(), err)
	}
	return v, errb.String()
}

// seedShop records a shop of generated customers and orders plus customers
// from signed webhooks, while the server projects them.
func seedShop(t *testing.T, s *testServer, dir string, customers, orders int) tenant {
	t.Helper()
	tn := newTenant(t, dir, "replay.example.com", "agency", "customers:read,orders:read")
	waitForToken(t, s, tn)
	cli(t, dir, "dev", "generate", "--shop", tn.shopID, "--customers", fmt.Sprint(customers), "--orders", fmt.Sprint(orders))
	for i := range 20 {
		s.deliver(t, tn, "customers/create", fmt.Sprintf("replay-c-%d", i),
			customerPayload(int64(7000+i), fmt.Sprintf("person%d@replay.example.com", i), 0, "0.00", "2026-11-01T10:00:00-05:00"))
	}
	// Webhook subscriptions: changed, rotated, one deleted.
	for i, types := range []string{"order.paid,order.created", "*"} {
		id := cli(t, dir, "webhooks", "create", "--shop", tn.shopID, "--url", fmt.Sprintf("https://hooks.replay.example.com/%d", i),
			"--event-types", types)["id"].(string)
		cli(t, dir, "webhooks", "update", "--shop", tn.shopID, "--id", id, "--enabled=false", "--description", "replayed")
		cli(t, dir, "webhooks", "rotate-secret", "--shop", tn.shopID, "--id", id, "--overlap", "1h")
		if i == 1 {
			cli(t, dir, "webhooks", "delete", "--shop", tn.shopID, "--id", id)
		}
	}
	return tn
}

// Replaying the whole log gives read models equal, row for row, to those
// the server built as events arrived; the old version is dropped and the
// pointer names the new one.
func TestReplayEqualsIncrementalBuild(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	seedShop(t, s, dir, 120, 600)
	head := waitAllProjected(t, dir)
	s.stop()
	want := snapshot(t, dir)

	res, progress := replayCLI(t, dir)
	if res["resumed"] != false || uint64(res["position"].(float64)) != head || res["previous"] != replay.DefaultVersion {
		t.Fatalf("result %v", res)
	}
	if !strings.Contains(progress, fmt.Sprintf("replay: %d/%d events (100.0%%)", head, head)) {
		t.Fatalf("progress lines %q", progress)
	}
	live, err := replay.Current(dir)
	if err != nil || filepath.Base(live) != res["version"] {
		t.Fatalf("live version %s %v, result %v", live, err, res["version"])
	}
	if _, err := os.Stat(filepath.Join(dir, replay.DefaultVersion)); !os.IsNotExist(err) {
		t.Fatalf("old version still there: %v", err)
	}
	compareVersions(t, live, want)

	// Rebuilding one projector copies the others: still equal.
	res, _ = replayCLI(t, dir, "--projector", "customers")
	if fmt.Sprint(res["projectors"]) != "[customers]" {
		t.Fatalf("result %v", res)
	}
	live2, _ := replay.Current(dir)
	if live2 == live {
		t.Fatal("no new version")
	}
	compareVersions(t, live2, want)

	// The server starts on the replayed version and goes on.
	s2 := startServer(t, dir)
	defer s2.stop()
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"replay", "--data-dir", dir, "--projector", "nope"}, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), `unknown projector "nope"`) {
		t.Fatalf("unknown projector: exit %d %s", code, errb.String())
	}
}

// A replay run while the server serves and ingests: every GET during it is
// answered, the server moves to the new version by itself, and nothing
// recorded during the replay is missing after the switch.
func TestReplayWhileServingSwitchesLive(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) {
		c.Test.VersionPoll = 20 * time.Millisecond
		c.RateAgency = 1_000_000
	})
	defer s.stop()
	tn := seedShop(t, s, dir, 40, 200)
	waitAllProjected(t, dir)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var statuses []int
	delivered := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := do(t, http.MethodPost, s.base+"/webhooks/events", customerPayload(int64(9000+i), fmt.Sprintf("live%d@replay.example.com", i), 0, "0.00", "2026-11-01T10:00:00-05:00"),
				webhookHeaders(tn, "customers/create", fmt.Sprintf("live-%d", i), customerPayload(int64(9000+i), fmt.Sprintf("live%d@replay.example.com", i), 0, "0.00", "2026-11-01T10:00:00-05:00")))
			g := s.get(t, "/api/v1/customers?limit=5", tn.token)
			mu.Lock()
			statuses = append(statuses, r.status, g.status)
			delivered = i + 1
			mu.Unlock()
		}
	}()
	started := time.Now()
	res, progress := replayCLI(t, dir)
	t.Logf("replay %v: %s", time.Since(started), progress)
	eventually(t, 15*time.Second, "the server switches", func() bool {
		return strings.Contains(s.logs.String(), "read models switched to the replayed version")
	})
	close(stop)
	wg.Wait()
	for _, st := range statuses {
		if st != http.StatusOK {
			t.Fatalf("an answer during the replay was %d", st)
		}
	}
	if delivered == 0 {
		t.Fatal("nothing delivered during the replay")
	}
	// 40 generated and 20 delivered customers, then the live ones.
	want := 60 + delivered
	eventually(t, 15*time.Second, fmt.Sprintf("%d customers listed", want), func() bool {
		return countCustomers(t, s, tn.token) == want
	})
	if live, _ := replay.Current(dir); filepath.Base(live) != res["version"] {
		t.Fatalf("live %s, replayed %v", live, res["version"])
	}
	if _, err := os.Stat(filepath.Join(dir, replay.DefaultVersion)); !os.IsNotExist(err) {
		t.Fatalf("old version still there: %v", err)
	}
}

// countCustomers walks every page of the shop's customers.
func countCustomers(t *testing.T, s *testServer, token string) int {
	t.Helper()
	n := 0
	path := "/api/v1/customers?limit=100"
	for {
		r := s.get(t, path, token)
		if r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		body := r.json(t)
		n += len(body["data"].([]any))
		next, _ := body["links"].(map[string]any)["next"].(string)
		if next == "" {
			return n
		}
		path = next[strings.Index(next, "/api/"):]
	}
}

// cancelAfterProgress cancels a replay once some of it is done.
type cancelAfterProgress struct {
	cancel context.CancelFunc
	done   uint64
}

func (c *cancelAfterProgress) Update(done, _ uint64) {
	if done > 0 && c.done == 0 {
		c.done = done
		c.cancel()
	}
}

func (c *cancelAfterProgress) Done() {}

// An interrupted replay resumes from where it stopped and still gives read
// models equal to the incremental ones.
func TestReplayResumesAfterInterrupt(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	seedShop(t, s, dir, 200, 2000)
	head := waitAllProjected(t, dir)
	s.stop()
	want := snapshot(t, dir)

	cfg := testConfig(dir)
	core, err := OpenCore(context.Background(), cfg, newLogger(&cfg, &bytes.Buffer{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &cancelAfterProgress{cancel: cancel}
	_, err = replay.Run(ctx, replay.Config{Dir: dir, Log: core.Log, Projectors: allProjectors(&App{Core: core}, func() {}),
		Reactors: allReactors(&App{Core: core}), Batch: 8, Poll: time.Millisecond, Progress: p})
	cancel()
	if cerr := core.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted replay: %v", err)
	}
	if live, _ := replay.Current(dir); filepath.Base(live) != replay.DefaultVersion {
		t.Fatalf("an interrupted replay switched to %s", live)
	}

	res, _ := replayCLI(t, dir)
	if res["resumed"] != true || uint64(res["position"].(float64)) != head || uint64(res["events"].(float64)) >= head {
		t.Fatalf("second run %v (head %d, interrupted after %d)", res, head, p.done)
	}
	live, _ := replay.Current(dir)
	compareVersions(t, live, want)
	matches, _ := filepath.Glob(filepath.Join(dir, "readmodels*.db"))
	if len(matches) != 1 {
		t.Fatalf("versions left: %v", matches)
	}
}

// After a customer's key is shredded, a replay yields no personal data of
// theirs anywhere in the new version, while the others' stays readable.
func TestReplayAfterShredHasNoPersonalData(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := seedShop(t, s, dir, 10, 20)
	waitAllProjected(t, dir)
	live, _ := replay.Current(dir)
	var shredded string
	if err := openVersion(t, live).QueryRow(`SELECT customer_id FROM customers WHERE email = ?`, "person3@replay.example.com").Scan(&shredded); err != nil {
		t.Fatal(err)
	}
	s.stop()

	cfg := testConfig(dir)
	core, err := OpenCore(context.Background(), cfg, newLogger(&cfg, &bytes.Buffer{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := core.Vault.Shred(context.Background(), tn.shopID, shredded); err != nil {
		t.Fatal(err)
	}
	if err := core.Close(); err != nil {
		t.Fatal(err)
	}
	replayCLI(t, dir)
	live, _ = replay.Current(dir)
	var files []byte
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(live + suffix)
		if err == nil {
			files = append(files, b...)
		}
	}
	for _, erased := range []string{"person3@replay.example.com", "First7003", "Last7003", "+15550007003"} {
		if bytes.Contains(files, []byte(erased)) {
			t.Errorf("%q found in the replayed read models", erased)
		}
	}
	for _, kept := range []string{"person4@replay.example.com", "First7004"} {
		if !bytes.Contains(files, []byte(kept)) {
			t.Errorf("%q of a customer not erased is missing", kept)
		}
	}
	var email sql.NullString
	var redacted bool
	if err := openVersion(t, live).QueryRow(`SELECT email, redacted FROM customers WHERE customer_id = ?`, shredded).Scan(&email, &redacted); err != nil {
		t.Fatal(err)
	}
	if email.Valid || !redacted {
		t.Fatalf("shredded customer: email %v, redacted %v", email, redacted)
	}
}
