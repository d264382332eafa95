package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/limits/limitstest"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/projections/anomalies"
)

// waitAnomalyRaiser waits until the anomaly reactor has handled pos.
func waitAnomalyRaiser(t *testing.T, rm *sql.DB, pos string) {
	t.Helper()
	want, _ := strconv.ParseUint(pos, 10, 64)
	eventually(t, time.Minute, "anomaly reactor at "+pos, func() bool {
		var at uint64
		err := rm.QueryRow(`SELECT position FROM _projector_checkpoints WHERE projector = ?`, anomalies.Name).Scan(&at)
		return err == nil && at >= want
	})
}

// shopAnomalies reads the shop's anomaly events of type typ through the
// audit history, once it reached the log's head.
func shopAnomalies(t *testing.T, s *testServer, v *openapitest.Validator, tn tenant, typ string) []map[string]any {
	t.Helper()
	log := readLog(t, s.dir)
	head := fmt.Sprint(uint64(log[len(log)-1].Position))
	r := s.get(t, "/api/v1/audit-events?limit=100&filter[type]="+typ, tn.token, "X-Wait-For-Position", head)
	if r.status != 200 {
		t.Fatalf("audit-events: %d %s", r.status, r.body)
	}
	v.ValidateResponse(t, r.req, r.resp, r.body)
	var out []map[string]any
	for _, d := range r.json(t)["data"].([]any) {
		out = append(out, d.(map[string]any)["attributes"].(map[string]any)["data"].(map[string]any))
	}
	return out
}

// deliver posts a WhatsApp notification and waits for the anomaly reactor
// to have handled it.
func deliverForAnomalies(t *testing.T, s *testServer, v *openapitest.Validator, rm *sql.DB, wt waTenant, body []byte) {
	t.Helper()
	r := waPost(t, s, v, wt.appSecret, body)
	if r.status != http.StatusOK {
		t.Fatalf("delivery: %d %s", r.status, r.body)
	}
	waitAnomalyRaiser(t, rm, r.position(t))
}

// TestTemplatePausedRaisesOneAnomaly: a PAUSED template notification
// delivered three times (twice the same body, once as another delivery of
// the same status) raises exactly one P1 anomaly; APPROVED resolves it.
// A YELLOW quality raises one P2, GREEN resolves it.
func TestTemplatePausedRaisesOneAnomaly(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	rm := messagingDB(t, dir)
	wt := connectWhatsApp(t, s, rm, "anomalies.example.com", "agency", "4455667788")

	paused := waFixture(t, "template_paused", wt.waba)
	again := bytes.Replace(paused, []byte(`"time": 1751334011`), []byte(`"time": 1751334099`), 1)
	if bytes.Equal(again, paused) {
		t.Fatal("the fixture's time was not replaced")
	}
	for _, body := range [][]byte{paused, paused, again} {
		deliverForAnomalies(t, s, v, rm, wt, body)
	}
	raised := shopAnomalies(t, s, v, wt.tenant, "AnomalyRaised")
	if len(raised) != 1 {
		t.Fatalf("%d anomalies raised, want 1: %v", len(raised), raised)
	}
	a := raised[0]
	if a["kind"] != domain.AnomalyTemplatePaused || a["severity"] != "P1" || a["dedupe_key"] != "template:1689556908129832" ||
		!strings.Contains(fmt.Sprint(a["title"]), "order_confirmation") || !strings.Contains(fmt.Sprint(a["summary"]), "paused") {
		t.Fatalf("anomaly: %v", a)
	}

	deliverForAnomalies(t, s, v, rm, wt, waFixture(t, "template_approved", wt.waba))
	resolved := shopAnomalies(t, s, v, wt.tenant, "AnomalyResolved")
	if len(resolved) != 1 || resolved[0]["anomaly_id"] != a["anomaly_id"] {
		t.Fatalf("resolved: %v, want the anomaly %v", resolved, a["anomaly_id"])
	}

	// Quality YELLOW, then GREEN.
	deliverForAnomalies(t, s, v, rm, wt, waFixture(t, "quality_rated", wt.waba))
	green := bytes.Replace(waFixture(t, "quality_rated", wt.waba), []byte(`"YELLOW"`), []byte(`"GREEN"`), 1)
	deliverForAnomalies(t, s, v, rm, wt, green)
	raised = shopAnomalies(t, s, v, wt.tenant, "AnomalyRaised")
	resolved = shopAnomalies(t, s, v, wt.tenant, "AnomalyResolved")
	if len(raised) != 2 || raised[1]["kind"] != domain.AnomalyNumberQualityYellow || raised[1]["severity"] != "P2" ||
		raised[1]["dedupe_key"] != "quality_yellow:15550783881" {
		t.Fatalf("raised after YELLOW: %v", raised)
	}
	if len(resolved) != 2 || resolved[1]["anomaly_id"] != raised[1]["anomaly_id"] {
		t.Fatalf("resolved after GREEN: %v", resolved)
	}
}

// TestBruteForceRaisesOneOperatorAnomaly: 1,000 failed or refused
// authentications from one address raise exactly one operator anomaly
// (no shop), however many more follow; the address is in no log line.
func TestBruteForceRaisesOneOperatorAnomaly(t *testing.T) {
	dir := t.TempDir()
	clock := limitstest.NewClock()
	s := behindProxy(t, dir, clock)
	bad := "copt_live_" + strings.Repeat("E", 32)
	const ip = "192.0.2.201"
	stream := domain.AnomalyStream("", app.BruteForceKey(netip.MustParseAddr(ip), clock.Now()))
	count := func() int {
		n := 0
		for _, e := range readLog(t, dir) {
			if e.StreamID == stream && e.Type == "AnomalyRaised" {
				n++
			}
		}
		return n
	}
	for i := range 999 {
		if r := s.from(t, ip, bad); r.status != 401 && r.status != 429 {
			t.Fatalf("attempt %d: %d %s", i+1, r.status, r.body)
		}
	}
	if n := count(); n != 0 {
		t.Fatalf("%d anomalies after 999 attempts", n)
	}
	for range 101 {
		s.from(t, ip, bad)
	}
	eventually(t, time.Minute, "the brute-force anomaly", func() bool { return count() > 0 })
	// More attempts, and the alerting attempt's key once more: still one.
	for range 50 {
		s.from(t, ip, bad)
	}
	log := readLog(t, dir)
	var shopless int
	for _, e := range log {
		if e.Type == "AnomalyRaised" {
			if e.ShopID != "" {
				t.Fatalf("the brute-force anomaly belongs to shop %q", e.ShopID)
			}
			shopless++
		}
	}
	if shopless != 1 || count() != 1 {
		t.Fatalf("%d operator anomalies (%d on the address's key), want 1", shopless, count())
	}
	if strings.Contains(s.logs.String(), ip) {
		t.Fatal("the address is in the logs")
	}
}

// TestWebhookFailingAnomalyResolvedOnRecovery: an endpoint failing long
// enough for the first warning raises one P2 anomaly; the first delivery
// that succeeds afterwards records WebhookSubscriptionRecovered, which
// resolves it.
func TestWebhookFailingAnomalyResolvedOnRecovery(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) {
		fastWebhooks(c)
		c.Test.OutboundWebhooks.Schedule = slices.Repeat([]time.Duration{100 * time.Millisecond}, 11)
		c.Test.OutboundWebhooks.DisableAfter = 10 * time.Second
	})
	tn := newTenant(t, dir, "wh-recover.example.com", "agency", "webhooks:read,audit:read")
	var healed atomic.Bool
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if !healed.Load() {
			w.WriteHeader(http.StatusBadGateway)
		}
	})
	sub, _ := subscribe(t, dir, tn, rc.srv.URL, "customer.created")
	waitForToken(t, s, tn)
	i := 1
	eventually(t, minEventually, "the first warning", func() bool {
		postCustomers(t, s, tn, i, 1)
		i++
		return len(auditOf(t, s, tn.token, "WebhookSubscriptionFailing")) > 0
	})
	healed.Store(true)
	eventually(t, minEventually, "the recovery", func() bool {
		postCustomers(t, s, tn, i, 1)
		i++
		return len(auditOf(t, s, tn.token, "WebhookSubscriptionRecovered")) == 1
	})
	eventually(t, minEventually, "the anomaly resolved", func() bool {
		return len(auditOf(t, s, tn.token, "AnomalyResolved")) > 0
	})
	raised := auditOf(t, s, tn.token, "AnomalyRaised")
	resolved := auditOf(t, s, tn.token, "AnomalyResolved")
	if len(raised) != 1 || len(resolved) != 1 {
		t.Fatalf("raised %v, resolved %v: want one each", raised, resolved)
	}
	a := raised[0]["data"].(map[string]any)
	if a["kind"] != domain.AnomalyWebhookFailing || a["severity"] != "P2" || a["dedupe_key"] != "webhook_failing:"+sub ||
		resolved[0]["data"].(map[string]any)["anomaly_id"] != a["anomaly_id"] {
		t.Fatalf("raised %v, resolved %v", a, resolved[0])
	}
	log := readLog(t, dir)
	head := fmt.Sprint(uint64(log[len(log)-1].Position))
	if r := s.get(t, "/api/v1/webhook-subscriptions/"+sub, tn.token, "X-Wait-For-Position", head); r.status != 200 ||
		r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)["failing_since"] != nil {
		t.Fatalf("the subscription after recovery: %d %s", r.status, r.body)
	}
}
