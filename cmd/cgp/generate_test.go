package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"

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
	for _, args := range [][]string{
		{"dev", "generate", "--customers", "10"},
		{"dev", "generate", "--shop", "shop_x", "--customers", "-1"},
		{"dev", "generate", "--shop", "shop_x", "--customers", "0", "--orders", "5"},
		{"dev", "generate", "--shop", "shop_x", "--orders", "-3"},
		{"dev", "generate", "--shop", "shop_x", "--workers", "0"},
		{"dev", "generate", "--shop", "shop_x", "--customers", "many"},
		{"dev", "generate", "--shop", "shop_x", "extra"},
		{"dev"},
	} {
		if code, out, _ := runCLI(append(args, "--data-dir", dir)...); code != exitUsage || out != "" {
			t.Errorf("%v: exit %d, output %q; want %d and none", args, code, out, exitUsage)
		}
	}
}
