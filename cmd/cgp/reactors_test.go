package main

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/replay"
)

// reactorCheckpoints reads every reactor's checkpoint in the live
// read-model version of a stopped server.
func reactorCheckpoints(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	path, err := replay.Current(dir)
	if err != nil {
		t.Fatal(err)
	}
	db := openVersion(t, path)
	out := map[string]int64{}
	for _, r := range allReactors(&App{Core: &Core{}}) {
		var pos int64
		if err := db.QueryRow(`SELECT position FROM _projector_checkpoints WHERE projector = ?`, r.Name).Scan(&pos); err != nil {
			t.Fatalf("checkpoint of reactor %s: %v", r.Name, err)
		}
		out[r.Name] = pos
	}
	return out
}

// cgp replay rebuilds read models only: with a data request pending (its
// endpoint answers 500, the retry is an hour away), a customer enrolled in
// a journey and a customer erased,
// a replay delivers nothing to the endpoint, appends nothing to the log,
// names no reactor among what it rebuilt, and leaves every reactor's
// checkpoint as it was.
func TestReplayRunsNoReactorAndSendsNothing(t *testing.T) {
	dir := t.TempDir()
	hook, calls := countingHook(t, http.StatusInternalServerError)
	s := startServerWith(t, dir, func(c *Config) {
		c.OutboundAllowPrivate, c.Test.OutboundTLS = true, trustTLS(hook)
		c.Test.ExportRetry, c.Test.ExportPoll = time.Hour, 20*time.Millisecond
	})
	tn := newTenant(t, dir, "reactors.example.com", "agency", "customers:read,journeys:write")
	cli(t, dir, "shops", "privacy", "--shop", tn.shopID, "--data-request-url", hook.URL+"/gdpr", "--outbound-allow-private")
	waitForToken(t, s, tn)
	// A journey the new customer enrolls in (the enrollment reactor acts).
	c := catalogClient{t: t, s: s, v: openapitest.NewValidator(t), token: tn.token}
	c.ok(201, http.MethodPost, "/api/v1/journeys", journeyBody("Welcome", "customers/create", ""))
	seedCustomer(t, s, tn)
	eventually(t, time.Minute, "the customer is enrolled", func() bool { return countType(readLog(t, dir), "JourneyEnrollmentStarted") == 1 })
	requestData(t, s, tn)
	eventually(t, 20*time.Second, "the data-request endpoint is tried", func() bool { return calls.Load() >= 1 })
	waitAllProjected(t, dir)
	s.stop()

	tried := calls.Load()
	head := len(readLog(t, dir))
	before := reactorCheckpoints(t, dir)
	for name, pos := range before {
		if pos == 0 {
			t.Fatalf("reactor %s never ran: the test would prove nothing", name)
		}
	}
	res, _ := replayCLI(t, dir)
	if got := calls.Load(); got != tried {
		t.Errorf("the replay called the data-request endpoint: %d calls, %d before", got, tried)
	}
	if n := len(readLog(t, dir)); n != head {
		t.Errorf("the replay appended %d events", n-head)
	}
	if n := countType(readLog(t, dir), "JourneyEnrollmentStarted"); n != 1 {
		t.Errorf("%d enrollments after the replay, want 1", n)
	}
	rebuilt := fmt.Sprint(res["projectors"])
	for name := range before {
		if slices.Contains(toStrings(res["projectors"]), name) {
			t.Errorf("the replay rebuilt reactor %s (%s)", name, rebuilt)
		}
	}
	if after := reactorCheckpoints(t, dir); !maps.Equal(after, before) {
		t.Errorf("reactor checkpoints moved: %v, before %v", after, before)
	}
}

func countType(events []eventlog.Event, typ string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
