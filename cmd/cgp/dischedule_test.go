package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestDailyDecisionRunOverHTTP: `cgp serve` with a daily time already
// passed runs every installed shop at start-up (the catch-up), trigger
// schedule, under the day's run id; the uninstalled shop is skipped; the
// runs read back over the admin API; a restart the same day runs nothing
// again; `cgp di run` on demand still adds runs.
func TestDailyDecisionRunOverHTTP(t *testing.T) {
	dir := t.TempDir()
	v := openapitest.NewValidator(t)
	// The shops exist before the scheduling server starts; one uninstalls
	// the app through a signed app/uninstalled delivery. This first server
	// has no schedule (testConfig leaves --di-daily-at empty: off).
	s0 := startServer(t, dir)
	a := newTenant(t, dir, "sched-a.example.com", "agency", "analytics:read")
	b := newTenant(t, dir, "sched-b.example.com", "agency", "analytics:read")
	gone := newTenant(t, dir, "sched-gone.example.com", "agency", "analytics:read")
	for _, x := range []tenant{a, b, gone} {
		waitForToken(t, s0, x)
	}
	pos := s0.deliver(t, gone, "app/uninstalled", "sched-uninstall-1", fixture(t, "app/uninstalled"))
	waitProjected(t, readModels(t, dir), "tenancy", pos)
	s0.stop()
	if n := startsOf(t, dir); len(n) != 0 {
		t.Fatalf("runs before the schedule: %v", n)
	}

	// The schedule's clock is pinned to this moment, so the day cannot
	// change between the two servers; 00:00 has always passed.
	now := time.Now().UTC()
	day := now.Format(domain.RunDayLayout)
	scheduled := func(c *Config) {
		c.DIDailyAt = "00:00"
		c.Test.DIClock = func() time.Time { return now }
	}
	s := startServerWith(t, dir, scheduled)
	runs := func(s *testServer, tn tenant) []map[string]any {
		t.Helper()
		r := s.get(t, "/api/v1/decision-intelligence/runs", tn.token)
		if r.status != http.StatusOK {
			t.Fatalf("GET runs: %d %s", r.status, r.body)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return toMaps(r.json(t)["data"])
	}
	for _, tn := range []tenant{a, b} {
		var got []map[string]any
		eventually(t, 30*time.Second, "the scheduled run of "+tn.domain+" completed", func() bool {
			got = runs(s, tn)
			return len(got) > 0 && attr(got[0], "status") == domain.RunCompleted
		})
		if len(got) != 1 || got[0]["id"] != domain.ScheduledRunID(tn.shopID, day) || attr(got[0], "trigger") != domain.TriggerSchedule {
			t.Fatalf("runs of %s: %v", tn.domain, got)
		}
		one := s.get(t, "/api/v1/decision-intelligence/runs/"+domain.ScheduledRunID(tn.shopID, day), tn.token)
		if one.status != http.StatusOK || attrs(data(one, t))["trigger"] != domain.TriggerSchedule {
			t.Fatalf("GET the day's run: %d %s", one.status, one.body)
		}
		v.ValidateResponse(t, one.req, one.resp, one.body)
	}
	eventually(t, 30*time.Second, "the first pass ends", func() bool { return strings.Contains(s.logs.String(), "decision-intelligence schedule pass") })
	logs := s.logs.String()
	for _, want := range []string{`"run_id":"` + domain.ScheduledRunID(a.shopID, day) + `"`, `"shop_id":"` + b.shopID + `"`, `"recommendations":0`} {
		if !strings.Contains(logs, want) {
			t.Errorf("server log lacks %s", want)
		}
	}
	if strings.Contains(logs, a.domain) || strings.Contains(logs, "owner@atelier-nord.example") {
		t.Error("the schedule logged a shop domain or e-mail")
	}
	s.stop()

	// Restarted the same day: its start-up pass finds the day's runs in the
	// log and runs nothing.
	s2 := startServerWith(t, dir, scheduled)
	eventually(t, 30*time.Second, "the restarted server's first pass ends", func() bool {
		return strings.Contains(s2.logs.String(), "decision-intelligence schedule pass")
	})
	if !strings.Contains(s2.logs.String(), `"ran":0`) {
		t.Errorf("the restarted server's pass ran shops: %s", s2.logs.String())
	}
	for _, tn := range []tenant{a, b} {
		if got := runs(s2, tn); len(got) != 1 {
			t.Fatalf("runs of %s after a restart: %v", tn.domain, got)
		}
	}
	n := startsOf(t, dir)
	if n[a.shopID] != 1 || n[b.shopID] != 1 || n[gone.shopID] != 0 || len(n) != 2 {
		t.Fatalf("runs started per shop: %v", n)
	}

	// On demand runs are not limited by the schedule.
	out := cli(t, dir, "di", "run", "--shop", a.shopID)
	if out["status"] != domain.RunCompleted || out["id"] == domain.ScheduledRunID(a.shopID, day) {
		t.Fatalf("di run: %v", out)
	}
	eventually(t, 30*time.Second, "the on-demand run is listed", func() bool { return len(runs(s2, a)) == 2 })
}

// startsOf counts the DecisionRunStarted events of the log per shop.
func startsOf(t *testing.T, dir string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, e := range readLog(t, dir) {
		if e.Type == "DecisionRunStarted" {
			n[e.ShopID]++
		}
	}
	return n
}

func TestDIDailyAtConfig(t *testing.T) {
	for _, at := range []string{"02:00", "00:00", "23:59", "off", ""} {
		cfg := testConfig(t.TempDir())
		cfg.DIDailyAt = at
		if err := cfg.Validate(); err != nil {
			t.Errorf("--di-daily-at %q: %v", at, err)
		}
	}
	for _, at := range []string{"24:00", "2am", "02:00:00", "-01:00"} {
		cfg := testConfig(t.TempDir())
		cfg.DIDailyAt = at
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "di-daily-at") {
			t.Errorf("--di-daily-at %q: %v", at, err)
		}
	}
	// The flag's default and its environment twin.
	code, _, stderr := runCLI("serve", "--di-daily-at", "25:00", "--data-dir", t.TempDir())
	if code == 0 || !strings.Contains(stderr, "di-daily-at") {
		t.Errorf("serve --di-daily-at 25:00: exit %d %q", code, stderr)
	}
	t.Setenv("CGP_DI_DAILY_AT", "7pm")
	code, _, stderr = runCLI("serve", "--data-dir", t.TempDir())
	if code == 0 || !strings.Contains(stderr, "di-daily-at") {
		t.Errorf("serve with CGP_DI_DAILY_AT=7pm: exit %d %q", code, stderr)
	}
}
