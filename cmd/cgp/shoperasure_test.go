package main

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/internal/sqlitedb"
	"github.com/cgp-platform/cgp/replay"
)

// testClock is a clock a test moves; it counts the reads made after the
// last move, so a test can wait until the server has seen the new time.
type testClock struct {
	mu        sync.Mutex
	now       time.Time
	sinceMove atomic.Int64
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sinceMove.Add(1)
	return c.now
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.sinceMove.Store(0)
	c.mu.Unlock()
}

// uninstalledAt is the X-Commerce-Triggered-At of webhookHeaders: the
// uninstall time, so the countdown ends 30 days later.
var uninstalledAt = webhookTriggeredAt

func retentionConfig(clock *testClock) func(*Config) {
	return func(c *Config) {
		c.Test.RetentionEvery = 10 * time.Millisecond
		c.Test.RetentionClock = clock.Now
	}
}

// erasureTenant creates a shop whose account name does not repeat its
// domain (the account is not the shop's, it outlives it).
func erasureTenant(t *testing.T, dir, domainName string) tenant {
	t.Helper()
	acc := cli(t, dir, "accounts", "create", "--name", "Erasure Agency", "--plan", "agency")
	secret := "whsec_" + strings.Repeat("k", 20) + strings.ReplaceAll(domainName, ".", "")
	shop := cli(t, dir, "shops", "create", "--account", acc["id"].(string), "--domain", domainName, "--plan", "agency",
		"--webhook-secret", secret)
	tok := cli(t, dir, "tokens", "create", "--shop", shop["id"].(string), "--scopes", "customers:read,customers:write")
	return tenant{accountID: acc["id"].(string), shopID: shop["id"].(string), domain: domainName, secret: secret,
		token: tok["token"].(string), position: uint64(tok["position"].(float64))}
}

func countdowns(t *testing.T, dir, shop string) []any {
	t.Helper()
	list, _ := cli(t, dir, "shops", "retention", "--shop", shop)["countdowns"].([]any)
	return list
}

// logEvents returns the events of stream in the log.
func logEvents(t *testing.T, dir, stream string) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	for _, e := range readLog(t, dir) {
		if e.StreamID == stream {
			out = append(out, e)
		}
	}
	return out
}

func hasEvent(evs []eventlog.Event, typ string) bool {
	for _, e := range evs {
		if e.Type == typ {
			return true
		}
	}
	return false
}

func TestRetentionCountdownSurvivesRestartThenErases(t *testing.T) {
	dir := t.TempDir()
	clock := &testClock{now: uninstalledAt.Add(24 * time.Hour)}
	s := startServerWith(t, dir, retentionConfig(clock))
	tn := erasureTenant(t, dir, "countdown.example")
	waitForToken(t, s, tn)
	s.deliver(t, tn, shopify.TopicCustomersCreate, "cd-cus-1", customerPayload(4242101, "cora.countdown@example.org", 1, "10.00", "2026-10-01T10:00:00Z"))
	s.deliver(t, tn, shopify.TopicAppUninstalled, "cd-uninstall-1", fixture(t, shopify.TopicAppUninstalled))

	due := uninstalledAt.Add(domain.RetentionAfterUninstall).Format(time.RFC3339)
	var list []any
	eventually(t, 15*time.Second, "countdown visible", func() bool {
		list = countdowns(t, dir, tn.shopID)
		return len(list) == 1
	})
	c := list[0].(map[string]any)
	if c["shop_id"] != tn.shopID || c["retention_due_at"] != due || c["uninstalled_at"] != uninstalledAt.Format(time.RFC3339) {
		t.Fatalf("countdown %v, want due %s", c, due)
	}

	// A restart on the same data directory resumes the countdown.
	s.stop()
	s = startServerWith(t, dir, retentionConfig(clock))
	if list := countdowns(t, dir, tn.shopID); len(list) != 1 || list[0].(map[string]any)["retention_due_at"] != due {
		t.Fatalf("countdown after restart %v", list)
	}
	if r := s.get(t, "/api/v1/usage", tn.token); r.status != http.StatusOK {
		t.Fatalf("token before the due date: %d %s", r.status, r.body)
	}

	// Past the due date the shop is erased.
	clock.Set(uninstalledAt.Add(domain.RetentionAfterUninstall + time.Second))
	eventually(t, 15*time.Second, "token refused after erasure", func() bool {
		r := s.get(t, "/api/v1/usage", tn.token)
		return r.status == http.StatusUnauthorized && r.errorCode(t) == "invalid_token"
	})
	var erased *domain.ShopErased
	for _, e := range logEvents(t, dir, domain.ShopStream(tn.shopID)) {
		if e.Type == "ShopErased" {
			d, err := decodeUnsealed(e)
			if err != nil {
				t.Fatal(err)
			}
			erased = d
		}
	}
	if erased == nil || erased.Reason != domain.ShopErasedRetention {
		t.Fatalf("ShopErased %+v", erased)
	}
	eventually(t, 15*time.Second, "countdown ended", func() bool {
		out := cli(t, dir, "shops", "retention", "--shop", tn.shopID)
		list, _ := out["countdowns"].([]any)
		return len(list) == 0 && out["erased_at"] == erased.ErasedAt.Format(time.RFC3339)
	})
	if r := s.webhook(t, tn, shopify.TopicCustomersCreate, "cd-cus-2", customerPayload(4242102, "late@example.org", 1, "1.00", "2026-10-01T10:00:00Z")); r.status != http.StatusUnauthorized {
		t.Fatalf("webhook of an erased shop: %d %s", r.status, r.body)
	}
	// The erasure is recorded once: the countdown keeps running.
	eventually(t, 15*time.Second, "more countdown passes", func() bool { return clock.sinceMove.Load() > 5 })
	n := 0
	for _, e := range logEvents(t, dir, domain.ShopStream(tn.shopID)) {
		if e.Type == "ShopErased" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d ShopErased events, want 1", n)
	}
	// Commands on the erased shop answer not found, never a server error.
	var out, errb bytes.Buffer
	if code := Run(t.Context(), []string{"shops", "reinstall", "--shop", tn.shopID, "--data-dir", dir}, &out, &errb); code == 0 ||
		!strings.Contains(errb.String(), "not found") {
		t.Fatalf("reinstall of an erased shop: exit %d %s", code, errb.String())
	}
}

func TestReinstallCancelsCountdown(t *testing.T) {
	dir := t.TempDir()
	clock := &testClock{now: uninstalledAt.Add(time.Hour)}
	s := startServerWith(t, dir, retentionConfig(clock))
	tn := erasureTenant(t, dir, "reinstall.example")
	cli2 := erasureTenant(t, dir, "resubscribe.example")
	waitForToken(t, s, cli2)
	for _, x := range []tenant{tn, cli2} {
		s.deliver(t, x, shopify.TopicAppUninstalled, "ri-uninstall-"+x.shopID, fixture(t, shopify.TopicAppUninstalled))
	}
	eventually(t, 15*time.Second, "countdowns visible", func() bool {
		return len(countdowns(t, dir, tn.shopID)) == 1 && len(countdowns(t, dir, cli2.shopID)) == 1
	})
	// One shop is reinstalled by the operator, the other approves a
	// subscription from the reinstalled app (ACTIVE, after the uninstall).
	if r := cli(t, dir, "shops", "reinstall", "--shop", tn.shopID); r["installed"] != true {
		t.Fatalf("reinstall: %v", r)
	}
	sub := withField(t, fixture(t, shopify.TopicAppSubscriptionsUpdate), "updated_at", `"2026-03-18T10:02:13+01:00"`, `"`+uninstalledAt.Add(time.Hour).Format(time.RFC3339)+`"`)
	s.deliver(t, cli2, shopify.TopicAppSubscriptionsUpdate, "ri-sub-1", sub)
	eventually(t, 15*time.Second, "countdowns cancelled", func() bool {
		return len(countdowns(t, dir, tn.shopID)) == 0 && len(countdowns(t, dir, cli2.shopID)) == 0
	})
	clock.Set(uninstalledAt.Add(domain.RetentionAfterUninstall + 24*time.Hour))
	eventually(t, 15*time.Second, "countdown passes past the due date", func() bool { return clock.sinceMove.Load() > 5 })
	for _, x := range []tenant{tn, cli2} {
		evs := logEvents(t, dir, domain.ShopStream(x.shopID))
		if !hasEvent(evs, "AppReinstalled") || hasEvent(evs, "ShopErased") {
			t.Fatalf("shop %s events %v", x.shopID, evs)
		}
		if r := s.get(t, "/api/v1/usage", x.token); r.status == http.StatusUnauthorized || r.status >= 500 {
			t.Fatalf("token of a reinstalled shop: %d %s", r.status, r.body)
		}
	}
}

// erasedValues are what the erased shop's customer and the shop itself
// leave in the data directory before the erasure.
type erasedValues []string

func (v erasedValues) findIn(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) { // a -wal or -journal removed meanwhile
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, s := range v {
			if bytes.Contains(b, []byte(s)) {
				found = append(found, fmt.Sprintf("%s in %s", s, filepath.Base(path)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// shopRows lists the read-model tables holding a row of shop (the
// tenancy tombstone and the audit index of the log's envelopes aside).
func shopRows(t *testing.T, dir, shop string) []string {
	t.Helper()
	path, err := replay.Current(dir)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(sqlitedb.Connector(path, "mode=ro", "PRAGMA busy_timeout = 5000;"))
	defer db.Close()
	rows, err := db.Query(`SELECT DISTINCT m.name FROM sqlite_master m, pragma_table_info(m.name) c
		WHERE m.type = 'table' AND c.name = 'shop_id' ORDER BY m.name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if len(tables) < 20 {
		t.Fatalf("only %d tables with a shop_id column: %v", len(tables), tables)
	}
	var holding []string
	for _, name := range tables {
		// erased_shops is the tenancy tombstone; audit_events indexes the
		// envelopes the log keeps (ids, types, actors: no payload), owned
		// by the audit history.
		if name == "erased_shops" || name == "audit_events" {
			continue
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM "`+name+`" WHERE shop_id = ?`, shop).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			holding = append(holding, fmt.Sprintf("%s (%d)", name, n))
		}
	}
	return holding
}

func TestShopRedactErasesTheWholeShop(t *testing.T) {
	dir := t.TempDir()
	withWarehouse := func(c *Config) { c.Warehouse = app.WarehouseSQLite; c.Test.RetentionEvery = 10 * time.Millisecond }
	s := startServerWith(t, dir, withWarehouse)
	gone := erasureTenant(t, dir, "erase-me.example")
	kept := erasureTenant(t, dir, "keep-me.example")
	waitForToken(t, s, kept)
	s.deliver(t, gone, shopify.TopicCustomersCreate, "er-cus-1", customerPayload(4242001, "erin.erased@example.org", 2, "99.00", "2026-10-01T10:00:00Z"))
	s.deliver(t, kept, shopify.TopicCustomersCreate, "er-cus-2", customerPayload(5353001, "kim.kept@example.org", 1, "5.00", "2026-10-01T10:00:00Z"))
	goneCustomer := domain.CustomerIDFromExternal(gone.shopID, "4242001")
	keptCustomer := domain.CustomerIDFromExternal(kept.shopID, "5353001")
	// A write with an Idempotency-Key: its stored response names the customer.
	eventually(t, 15*time.Second, "customer readable", func() bool {
		return s.get(t, "/api/v1/customers/"+goneCustomer, gone.token).status == http.StatusOK
	})
	patch := do(t, http.MethodPatch, s.base+"/api/v1/customers/"+goneCustomer, []byte(`{"data":{"attributes":{"tags":["vip"]}}}`),
		map[string]string{"Authorization": "Bearer " + gone.token, "Content-Type": "application/vnd.api+json", "Idempotency-Key": "erase-1"})
	if patch.status != http.StatusOK || !bytes.Contains(patch.body, []byte("erin.erased@example.org")) {
		t.Fatalf("PATCH: %d %s", patch.status, patch.body)
	}
	values := erasedValues{"erin.erased@example.org", "First4242001", "Last4242001", "+15554242001", "erase-me.example"}
	keptValues := erasedValues{"kim.kept@example.org"}
	// Before the erasure the values are in the read models, the
	// warehouse and the stored idempotent response.
	eventually(t, 15*time.Second, "the shop's values stored", func() bool {
		found := strings.Join(values.findIn(t, dir), ", ")
		return strings.Contains(found, "erin.erased@example.org in idempotency.db") &&
			strings.Contains(found, "erin.erased@example.org in warehouse.db") && strings.Contains(found, "erase-me.example in readmodels.db")
	})

	// Its AI credits: a budget override and a month's ledger.
	cli(t, dir, "shops", "credits", "--shop", gone.shopID, "--monthly", "10")
	chargeCredits(t, dir, gone.shopID)
	eventually(t, 15*time.Second, "the shop's credit rows", func() bool {
		rows := strings.Join(shopRows(t, dir, gone.shopID), ", ")
		return strings.Contains(rows, "credit_budgets") && strings.Contains(rows, "credit_months")
	})

	// Its pictures: an image operation's result in the object store.
	imgKey := cli(t, dir, "image-keys", "mint", "--shop", gone.shopID, "--scopes", "images:write")["token"].(string)
	op := s.imageOp(t, imgKey, "/api/v1/images/upscales", encodePNG(t, texture(20, 20)), "image/png")
	if op.status != http.StatusAccepted {
		t.Fatalf("image operation: %d %s", op.status, op.body)
	}
	shopImages := filepath.Join(dir, app.ImagesDir, gone.shopID)
	eventually(t, 15*time.Second, "the shop's result stored", func() bool {
		_, err := os.Stat(filepath.Join(shopImages, opID(t, op)+"-result"))
		return err == nil
	})

	redacted := time.Now()
	s.deliver(t, gone, shopify.TopicShopRedact, "er-redact-1", fixture(t, shopify.TopicShopRedact))

	eventually(t, 15*time.Second, "token refused", func() bool {
		r := s.get(t, "/api/v1/customers/"+goneCustomer, gone.token)
		return r.status == http.StatusUnauthorized && r.errorCode(t) == "invalid_token"
	})
	t.Logf("token refused %v after shop/redact", time.Since(redacted).Round(time.Millisecond))
	if r := s.webhook(t, gone, shopify.TopicShopRedact, "er-redact-2", fixture(t, shopify.TopicShopRedact)); r.status != http.StatusUnauthorized {
		t.Fatalf("webhook of an erased shop: %d %s", r.status, r.body)
	}
	check := func(when string) {
		t.Helper()
		var rows []string
		defer func() {
			if len(rows) > 0 {
				t.Logf("%s: rows of the erased shop in %v", when, rows)
			}
		}()
		eventually(t, 20*time.Second, when+": no row of the erased shop", func() bool {
			rows = shopRows(t, dir, gone.shopID)
			return len(rows) == 0
		})
		eventually(t, 20*time.Second, when+": no byte of the erased shop", func() bool { return len(values.findIn(t, dir)) == 0 })
		if rows := shopRows(t, dir, kept.shopID); len(rows) == 0 {
			t.Fatalf("%s: the other shop lost its rows", when)
		}
		r := s.get(t, "/api/v1/customers/"+keptCustomer, kept.token)
		if r.status != http.StatusOK || !bytes.Contains(r.body, []byte("kim.kept@example.org")) {
			t.Fatalf("%s: the other shop's customer: %d %s", when, r.status, r.body)
		}
		if found := keptValues.findIn(t, dir); len(found) == 0 {
			t.Fatalf("%s: the other shop's customer is not stored any more", when)
		}
		if strings.Contains(s.logs.String(), "erin.erased@example.org") {
			t.Fatalf("%s: the erased customer's e-mail is in the logs", when)
		}
	}
	check("after shop/redact")
	eventually(t, 20*time.Second, "the shop's pictures erased", func() bool {
		_, err := os.Stat(shopImages)
		return errors.Is(err, fs.ErrNotExist)
	})
	t.Logf("no row and no byte of the shop %v after shop/redact", time.Since(redacted).Round(time.Millisecond))
	if found := values.findIn(t, dir); len(found) > 0 {
		t.Fatalf("left after erasure: %v", found)
	}

	// A replay rebuilds the read models from the log: nothing of the
	// erased shop comes back.
	s.stop()
	cli(t, dir, "replay")
	s = startServerWith(t, dir, withWarehouse)
	check("after a replay and a restart")
}

// decodeUnsealed decodes a ShopErased as any reader would, without keys.
func decodeUnsealed(e eventlog.Event) (*domain.ShopErased, error) {
	ev, err := domain.Events().Decode(e.Type, e.SchemaVersion, e.Data[1:])
	if err != nil {
		return nil, err
	}
	return ev.(*domain.ShopErased), nil
}
