package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	logsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
)

func TestDevGenerateRecordsAShopOnce(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "gen.example.com", "agency", "customers:read")
	const customers, orders = 200, 1000
	args := []string{"dev", "generate", "--shop", tn.shopID, "--customers", fmt.Sprint(customers), "--orders", fmt.Sprint(orders), "--seed", "7", "--workers", "8"}
	first := cli(t, dir, args...)
	if first["customers"] != float64(customers) || first["orders"] != float64(orders) {
		t.Fatalf("output %v", first)
	}
	pos := fmtAny(first["position"])
	head := headPosition(t, dir)
	if fmtAny(first["position"]) != fmt.Sprint(head) {
		t.Fatalf("printed position %v, log head %d", first["position"], head)
	}

	seen, spent, stages := map[string]bool{}, 0.0, map[string]int{}
	ordersSeen := 0
	next := "/api/v1/customers?limit=100"
	for pages := 0; next != ""; pages++ {
		if pages > customers/100+2 {
			t.Fatal("walk does not end")
		}
		r := s.get(t, next, tn.token, "X-Wait-For-Position", pos)
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", next, r.status, r.body)
		}
		doc := r.json(t)
		for _, d := range doc["data"].([]any) {
			c := d.(map[string]any)
			seen[c["id"].(string)] = true
			a := c["attributes"].(map[string]any)
			ordersSeen += int(a["orders_count"].(float64))
			spent += a["total_spent"].(float64)
			stages[a["lifecycle_stage"].(string)]++
		}
		next = ""
		if pg := doc["pagination"].(map[string]any); pg["has_next"] == true {
			next = "/api/v1/customers?limit=100&cursor=" + url.QueryEscape(pg["next_cursor"].(string))
		}
	}
	if len(seen) != customers || ordersSeen != orders || spent <= 0 {
		t.Fatalf("read model: %d customers, %d orders, %.2f spent; want %d, %d, > 0", len(seen), ordersSeen, spent, customers, orders)
	}
	if len(stages) < 3 {
		t.Fatalf("lifecycle stages %v: want at least 3 different", stages)
	}
	one := s.get(t, "/api/v1/customers?limit=1&filter[lifecycle_stage]=at_risk", tn.token, "X-Wait-For-Position", pos)
	if one.status != 200 || len(one.json(t)["data"].([]any)) != min(1, stages["at_risk"]) {
		t.Fatalf("at_risk filter: %d %s (stages %v)", one.status, one.body, stages)
	}

	again := cli(t, dir, args...)
	if again["position"] != first["position"] {
		t.Fatalf("re-run printed position %v, first run %v", again["position"], first["position"])
	}
	if h := headPosition(t, dir); h != head {
		t.Fatalf("re-run moved the log head from %d to %d", head, h)
	}
}

func headPosition(t *testing.T, dir string) uint64 {
	t.Helper()
	log, err := logsqlite.Open(logsqlite.Config{Path: filepath.Join(dir, "events.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	h, err := log.HeadPosition(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestDevGenerateBadFlagsExit2(t *testing.T) {
	dir := t.TempDir()
	// A shop that exists: an unknown one is exit 1 before any flag check.
	shop := newTenant(t, dir, "generate-flags.example.com", "agency", "*").shopID
	for _, args := range [][]string{
		{"dev", "generate", "--customers", "10"},
		{"dev", "generate", "--shop", shop, "--customers", "-1"},
		{"dev", "generate", "--shop", shop, "--customers", "0", "--orders", "5"},
		{"dev", "generate", "--shop", shop, "--orders", "-3"},
		{"dev", "generate", "--shop", shop, "--workers", "0"},
		{"dev", "generate", "--shop", shop, "--touchpoints-per-order", "-1"},
		{"dev", "generate", "--shop", shop, "--touchpoints-per-order", "101"},
		{"dev", "generate", "--shop", shop, "--customers", "many"},
		{"dev", "generate", "--shop", shop, "extra"},
		{"dev"},
	} {
		if code, out, _ := runCLI(append(args, "--data-dir", dir)...); code != exitUsage || out != "" {
			t.Errorf("%v: exit %d, output %q; want %d and none", args, code, out, exitUsage)
		}
	}
}

// TestDevGenerateTouchpoints generates a shop with checkout landings before
// each order and reads them back from the attribution read model: every
// order is credited to landings of its own customer within its 30 days,
// among them at least one of those generated for it (sessions of 30
// minutes may merge two); the landings span the channel mix; the output
// counts them; and a re-run appends nothing.
func TestDevGenerateTouchpoints(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "gen-tp.example.com", "agency", "attribution:read")
	const customers, orders, per = 30, 120, 4
	args := []string{"dev", "generate", "--shop", tn.shopID, "--customers", fmt.Sprint(customers), "--orders", fmt.Sprint(orders),
		"--touchpoints-per-order", fmt.Sprint(per), "--seed", "11", "--workers", "8"}
	out := cli(t, dir, args...)
	if out["touchpoints"] != float64(orders*per) || out["orders"] != float64(orders) {
		t.Fatalf("output %v", out)
	}
	pos := fmtAny(out["position"])
	head := headPosition(t, dir)

	// The generated checkouts of each order, by checkout id.
	own := map[string]string{} // checkout id → order id
	for i := range orders {
		for k := range per {
			own[domain.CheckoutIDFromExternal(tn.shopID, fmt.Sprintf("gen-k%d-%d", i, k))] = domain.OrderIDFromExternal(tn.shopID, fmt.Sprintf("gen-o%d", i))
		}
	}
	records, channels, credited := 0, map[string]bool{}, map[string]bool{}
	next := "/api/v1/attribution?limit=50&include=touchpoints"
	for pages := 0; next != ""; pages++ {
		if pages > orders/50+2 {
			t.Fatal("walk does not end")
		}
		r := s.get(t, next, tn.token, "X-Wait-For-Position", pos)
		if r.status != 200 {
			t.Fatalf("GET %s: %d %s", next, r.status, r.body)
		}
		doc := r.json(t)
		tps := map[string]map[string]any{}
		for _, it := range toMaps(doc["included"]) {
			tps[it["id"].(string)] = attrs(it)
		}
		for _, rec := range toMaps(doc["data"]) {
			records++
			a := attrs(rec)
			orderedAt, err := time.Parse(time.RFC3339Nano, a["ordered_at"].(string))
			if err != nil {
				t.Fatal(err)
			}
			ownSeen := false
			for _, c := range toMaps(a["models"].(map[string]any)["linear"]) {
				id, _ := c["touchpoint_id"].(string)
				tp := tps[id]
				if tp == nil {
					t.Fatalf("order %s: touchpoint %q not included", rec["id"], id)
				}
				at, err := time.Parse(time.RFC3339Nano, tp["occurred_at"].(string))
				if err != nil {
					t.Fatal(err)
				}
				if tp["kind"] != "checkout" || tp["customer_id"] != a["customer_id"] || at.After(orderedAt) || orderedAt.Sub(at) > 30*24*time.Hour {
					t.Errorf("order %s (%v, customer %v): touchpoint %v", rec["id"], orderedAt, a["customer_id"], tp)
				}
				if own[id] == "" {
					t.Errorf("order %s: credited touchpoint %s was not generated", rec["id"], id)
				}
				ownSeen = ownSeen || own[id] == rec["id"]
				channels[c["channel"].(string)] = true
				credited[id] = true
			}
			if !ownSeen {
				t.Errorf("order %s: none of its own touchpoints credited", rec["id"])
			}
		}
		next = ""
		if pg := doc["pagination"].(map[string]any); pg["has_next"] == true {
			next = "/api/v1/attribution?limit=50&include=touchpoints&cursor=" + url.QueryEscape(pg["next_cursor"].(string))
		}
	}
	if records != orders {
		t.Fatalf("%d attribution records, want %d", records, orders)
	}
	for _, ch := range []string{"paid_search", "paid_social", "email", "organic_search", "referral", "sms", "direct"} {
		if !channels[ch] {
			t.Errorf("no touchpoint of channel %s among %v", ch, channels)
		}
	}
	// Sessions merge landings within 30 minutes of each other: a few of
	// the generated ones may go uncredited, not more.
	if len(credited) < orders*per*9/10 {
		t.Errorf("%d of the %d generated touchpoints credited", len(credited), orders*per)
	}

	again := cli(t, dir, args...)
	if again["position"] != out["position"] {
		t.Fatalf("re-run printed position %v, first run %v", again["position"], out["position"])
	}
	if h := headPosition(t, dir); h != head {
		t.Fatalf("re-run moved the log head from %d to %d", head, h)
	}
}
