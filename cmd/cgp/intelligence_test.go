package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// writeFile writes a file of the test's temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const rankingHeader = "keyword,url,position,search_volume,clicks,impressions,date\n"

func TestSEOImportAndKeywordReads(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "seo-a.example.com", "agency", "analytics:read")
	other := newTenant(t, dir, "seo-b.example.com", "agency", "analytics:read")
	noScope := newTenant(t, dir, "seo-c.example.com", "agency", "orders:read")
	for _, x := range []tenant{tn, other, noScope} {
		waitForToken(t, s, x)
	}
	report := rankingHeader +
		"Running Shoes,https://seo-a.example.com/p/runner,7.5,12000,40,900,2026-11-01\n" +
		"running shoes,https://seo-a.example.com/p/runner,4.2,12000,55,1100,2026-11-08\n" +
		"trail shoes,https://seo-a.example.com/p/trail,12,3000,5,200,2026-11-08\n" +
		"trail shoes,https://seo-a.example.com/p/trail,10,3100,2,150,2026-11-01\n" +
		"socks,https://seo-a.example.com/p/socks,3,500,9,80,2026-11-08\n"
	file := writeFile(t, "rankings.csv", report)

	// A bad row anywhere fails the whole import, naming line and field.
	bad := writeFile(t, "bad.csv", report+"hats,https://seo-a.example.com/p/hat,first,10,1,2,2026-11-08\n")
	before := len(readLog(t, dir))
	code, _, stderr := runCLI("seo", "import", "--shop", tn.shopID, bad, "--data-dir", dir)
	if code != exitUsage || !strings.Contains(stderr, "position") || !strings.Contains(stderr, "line 7") {
		t.Fatalf("bad row: exit %d, stderr %q", code, stderr)
	}
	if after := len(readLog(t, dir)); after != before {
		t.Fatalf("a bad report appended %d events", after-before)
	}
	if code, _, _ := runCLI("seo", "import", bad, "--data-dir", dir); code != exitUsage {
		t.Errorf("without --shop: exit %d, want %d", code, exitUsage)
	}
	if code, _, _ := runCLI("seo", "import", "--shop", tn.shopID, filepath.Join(dir, "missing.csv"), "--data-dir", dir); code != exitUsage {
		t.Errorf("missing file: exit %d, want %d", code, exitUsage)
	}

	if code, _, stderr := runCLI("seo", "import", "--shop", "shop_unknown", file, "--data-dir", dir); code != exitFailure || !strings.Contains(stderr, "shop not found") {
		t.Errorf("unknown shop: exit %d %q", code, stderr)
	}
	out := cli(t, dir, "seo", "import", "--shop", tn.shopID, file)
	if out["appended"] != 5.0 || out["keywords"] != 3.0 || out["unchanged"] != 0.0 {
		t.Fatalf("import: %v", out)
	}
	pos := fmt.Sprint(uint64(out["position"].(float64)))
	before = len(readLog(t, dir))
	again := cli(t, dir, "seo", "import", "--shop", tn.shopID, file)
	if again["appended"] != 0.0 || again["unchanged"] != 5.0 {
		t.Fatalf("re-import: %v", again)
	}
	if after := len(readLog(t, dir)); after != before {
		t.Fatalf("re-import appended %d events", after-before)
	}

	runner := domain.KeywordID(tn.shopID, "running shoes", "https://seo-a.example.com/p/runner")
	got := s.get(t, "/api/v1/seo-intelligence/keywords/"+runner, tn.token, "X-Wait-For-Position", pos)
	if got.status != http.StatusOK {
		t.Fatalf("GET keyword: %d %s", got.status, got.body)
	}
	v.ValidateResponse(t, got.req, got.resp, got.body)
	if st := got.header.Get("X-Service-Stability"); st != "stable" {
		t.Errorf("X-Service-Stability = %q", st)
	}
	a := attrs(data(got, t))
	if a["keyword"] != "running shoes" || a["position"] != 4.2 || a["position_date"] != "2026-11-08" || a["previous_position"] != 7.5 ||
		a["previous_date"] != "2026-11-01" || a["change"] != 3.3 || a["clicks"] != 55.0 || a["rankings"] != 2.0 {
		t.Fatalf("keyword: %v", a)
	}

	list := func(query string) []map[string]any {
		t.Helper()
		r := s.get(t, "/api/v1/seo-intelligence/keywords?"+query, tn.token, "X-Wait-For-Position", pos)
		if r.status != http.StatusOK {
			t.Fatalf("list %s: %d %s", query, r.status, r.body)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
		return toMaps(r.json(t)["data"])
	}
	keywords := func(rs []map[string]any) string {
		var out []string
		for _, r := range rs {
			out = append(out, attr(r, "keyword").(string))
		}
		return strings.Join(out, ",")
	}
	for query, want := range map[string]string{
		"":                                 "socks,running shoes,trail shoes",
		"sort=-position":                   "trail shoes,running shoes,socks",
		"sort=-change":                     "running shoes,socks,trail shoes",
		"sort=-search_volume":              "running shoes,trail shoes,socks",
		"sort=keyword":                     "running shoes,socks,trail shoes",
		"filter[keyword]=Trail%20%20Shoes": "trail shoes",
	} {
		if got := keywords(list(query)); got != want {
			t.Errorf("list %q = %s, want %s", query, got, want)
		}
	}
	trail := list("filter[keyword]=trail%20shoes")[0]
	if attr(trail, "change") != -2.0 || attr(trail, "previous_position") != 10.0 {
		t.Errorf("trail shoes: %v", trail)
	}
	socks := list("filter[keyword]=socks")[0]
	if attr(socks, "change") != nil || attr(socks, "previous_position") != nil || attr(socks, "previous_date") != nil {
		t.Errorf("socks with one ranking: %v", socks)
	}
	// A cursor walk of one per page visits every keyword once.
	walked := pageWalker{t: t, s: s, v: v, token: tn.token, wait: uint64(out["position"].(float64))}.
		walk("/api/v1/seo-intelligence/keywords", "limit=1&sort=-change")
	if keywords(walked) != "running shoes,socks,trail shoes" {
		t.Errorf("walk = %s", keywords(walked))
	}

	for _, c := range []struct {
		path, token string
		status      int
		code        string
	}{
		{"/api/v1/seo-intelligence/keywords/" + runner, other.token, http.StatusNotFound, "not_found"},
		{"/api/v1/seo-intelligence/keywords/" + runner, noScope.token, http.StatusForbidden, "scope_required"},
		{"/api/v1/seo-intelligence/keywords", noScope.token, http.StatusForbidden, "scope_required"},
		{"/api/v1/seo-intelligence/keywords?sort=clicks", tn.token, http.StatusBadRequest, "invalid_parameter"},
		{"/api/v1/seo-intelligence/keywords?filter[url]=x", tn.token, http.StatusBadRequest, "invalid_parameter"},
	} {
		r := s.get(t, c.path, c.token, "X-Wait-For-Position", pos)
		if r.status != c.status || r.errorCode(t) != c.code {
			t.Errorf("GET %s: %d %s, want %d %s", c.path, r.status, r.body, c.status, c.code)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
	}
}

// TestDecisionIntelligenceRun seeds customers, orders, a product and an
// inventory level through signed webhooks, runs `cgp di run` and reads the
// run back over the admin API.
func TestDecisionIntelligenceRun(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "di-a.example.com", "agency", "analytics:read")
	other := newTenant(t, dir, "di-b.example.com", "agency", "analytics:read")
	noScope := newTenant(t, dir, "di-c.example.com", "agency", "orders:read")
	for _, x := range []tenant{tn, other, noScope} {
		waitForToken(t, s, x)
	}
	now := time.Now().UTC()
	day := func(ago int) string { return now.AddDate(0, 0, -ago).Format(time.RFC3339) }
	var last uint64
	// Two customers at risk (last order 100 and 120 days ago), one loyal.
	for _, c := range []struct {
		ext   int64
		spent string
		ago   int
	}{{601, "50.00", 120}, {602, "80.00", 100}, {603, "0.00", 5}} {
		last = s.deliver(t, tn, "customers/create", fmt.Sprintf("di-cus-%d", c.ext), customerPayload(c.ext, fmt.Sprintf("c%d@example.com", c.ext), 1, c.spent, day(c.ago)))
		if c.ext != 603 {
			last = s.deliverOrder(t, tn, testOrder{ext: 7000 + c.ext, customer: strconv.FormatInt(c.ext, 10), created: day(c.ago), total: c.spent, financial: "paid"})
		}
	}
	// Five recent orders of 2 units of variant 44123456789012 each: 10 units
	// in 30 days, 0.33 a day; the variant's 3 available cover 9 days, less
	// than the 14-day lead time. The product's other variant sells nothing.
	for i := range 5 {
		last = s.deliverOrder(t, tn, testOrder{ext: int64(8000 + i), customer: "603", created: day(i + 1), total: "10.00", financial: "paid"})
	}
	last = s.deliver(t, tn, "products/create", "di-prd", fixture(t, "products/create"))
	level := withField(t, fixture(t, "inventory_levels/update"), "inventory_item_id", "46234567890124", "46234567890123")
	last = s.deliver(t, tn, "inventory_levels/update", "di-inv", withField(t, level, "available", "7", "3"))
	db := readModels(t, dir)
	waitProjected(t, db, "customers", last)
	waitProjected(t, db, "commerce", last)

	out := cli(t, dir, "di", "run", "--shop", tn.shopID)
	runID, _ := out["id"].(string)
	if !domain.HasPrefixID(runID, domain.PrefixDecisionRun) || out["status"] != "completed" {
		t.Fatalf("di run: %v", out)
	}
	recs := toMaps(out["recommendations"])
	if len(recs) != 2 {
		t.Fatalf("recommendations: %v", out["recommendations"])
	}
	win, reorder := recs[0], recs[1]
	wf := win["figures"].(map[string]any)
	items := toMaps(win["items"])
	if win["kind"] != domain.RecommendWinBack || wf["customers"] != 2.0 || wf["total_spent"] != 130.0 || len(items) != 2 ||
		items[0]["id"] != domain.CustomerIDFromExternal(tn.shopID, "602") || items[1]["id"] != domain.CustomerIDFromExternal(tn.shopID, "601") {
		t.Errorf("win-back: %v", win)
	}
	ritems := toMaps(reorder["items"])
	if reorder["kind"] != domain.RecommendReorder || len(ritems) != 1 || ritems[0]["id"] != "44123456789012" {
		t.Fatalf("reorder: %v", reorder)
	}
	if f := ritems[0]["figures"].(map[string]any); f["available"] != 3.0 || f["units_sold"] != 10.0 || f["daily_velocity"] != 0.33 ||
		f["days_of_cover"] != 9.0 {
		t.Errorf("reorder figures: %v", f)
	}
	// An empty shop's run completes with no recommendations.
	empty := cli(t, dir, "di", "run", "--shop", other.shopID, "--trigger", "schedule")
	if empty["status"] != "completed" || len(toMaps(empty["recommendations"])) != 0 {
		t.Errorf("empty shop run: %v", empty)
	}
	if code, _, _ := runCLI("di", "run", "--data-dir", dir); code != exitUsage {
		t.Errorf("di run without --shop: exit %d", code)
	}

	pos := fmt.Sprint(uint64(out["position"].(float64)))
	got := s.get(t, "/api/v1/decision-intelligence/runs/"+runID, tn.token, "X-Wait-For-Position", pos)
	if got.status != http.StatusOK {
		t.Fatalf("GET run: %d %s", got.status, got.body)
	}
	v.ValidateResponse(t, got.req, got.resp, got.body)
	a := attrs(data(got, t))
	if a["status"] != "completed" || a["trigger"] != "cli" || a["finished_at"] == nil || len(toMaps(a["recommendations"])) != 2 {
		t.Fatalf("run: %v", a)
	}
	for query, want := range map[string]int{"": 1, "filter[status]=completed": 1, "filter[status]=running": 0} {
		r := s.get(t, "/api/v1/decision-intelligence/runs?"+query, tn.token, "X-Wait-For-Position", pos)
		if r.status != http.StatusOK || len(toMaps(r.json(t)["data"])) != want {
			t.Errorf("runs?%s: %d %s, want %d runs", query, r.status, r.body, want)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
	}
	for _, c := range []struct {
		path, token string
		status      int
		code        string
	}{
		{"/api/v1/decision-intelligence/runs/" + runID, other.token, http.StatusNotFound, "not_found"},
		{"/api/v1/decision-intelligence/runs/" + runID, noScope.token, http.StatusForbidden, "scope_required"},
		{"/api/v1/decision-intelligence/runs", noScope.token, http.StatusForbidden, "scope_required"},
		{"/api/v1/decision-intelligence/runs?filter[status]=done", tn.token, http.StatusBadRequest, "invalid_parameter"},
		{"/api/v1/decision-intelligence/runs?sort=status", tn.token, http.StatusBadRequest, "invalid_parameter"},
	} {
		r := s.get(t, c.path, c.token, "X-Wait-For-Position", pos)
		if r.status != c.status || r.errorCode(t) != c.code {
			t.Errorf("GET %s: %d %s, want %d %s", c.path, r.status, r.body, c.status, c.code)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
	}
}

// TestDecisionRunCampaignsBlockedByTemplate: a launched campaign whose
// WhatsApp template the platform rejected is recommended for attention;
// one with an approved template is not.
func TestDecisionRunCampaignsBlockedByTemplate(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := connectWhatsApp(t, s, rm, "di-tpl.example.com", "agency", "4101")
	waDeliver(t, s, v, rm, wt, "template_approved")
	waDeliver(t, s, v, rm, wt, "template_rejected")
	a := catalogClient{t: t, s: s, v: v, token: wt.token}
	aud := data(a.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"All"}}}`), t)["id"].(string)
	ids := map[string]string{}
	var last uint64
	for name, tpl := range map[string]string{"Blocked": rejectedTemplate, "Fine": approvedTemplate} {
		ids[name] = data(a.ok(201, http.MethodPost, "/api/v1/campaigns", campaignBody(name, aud, "whatsapp", tpl)), t)["id"].(string)
		r := a.call(http.MethodPost, "/api/v1/campaigns/"+ids[name]+"/launch", "")
		if r.status != http.StatusOK {
			t.Fatalf("launch %s: %d %s", name, r.status, r.body)
		}
		pos, _ := strconv.ParseUint(r.position(t), 10, 64)
		last = max(last, pos)
	}
	waitProjected(t, readModels(t, dir), "campaigns", last)

	out := cli(t, dir, "di", "run", "--shop", wt.shopID)
	recs := toMaps(out["recommendations"])
	if out["status"] != "completed" || len(recs) != 1 || recs[0]["kind"] != domain.RecommendTemplateBlocked {
		t.Fatalf("di run: %v", out)
	}
	items := toMaps(recs[0]["items"])
	if len(items) != 1 || items[0]["id"] != ids["Blocked"] || items[0]["type"] != "campaign" {
		t.Fatalf("blocked campaigns: %v", recs[0])
	}
	got := s.get(t, "/api/v1/decision-intelligence/runs/"+out["id"].(string), wt.token, "X-Wait-For-Position", fmt.Sprint(uint64(out["position"].(float64))))
	if got.status != http.StatusOK {
		t.Fatalf("GET run: %d %s", got.status, got.body)
	}
	v.ValidateResponse(t, got.req, got.resp, got.body)
}
