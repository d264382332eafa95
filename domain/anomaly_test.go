package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

var anmNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// paused is the draft of a paused template's anomaly, caused by cause.
func paused(cause string) domain.AnomalyDraft {
	return domain.AnomalyDraft{ShopID: "shop_1", Severity: domain.SeverityP1, Kind: domain.AnomalyTemplatePaused,
		Title: "WhatsApp template “order_update” was paused by the platform", DedupeKey: "template:111", Cause: cause,
		Resources: []domain.AnomalyResource{{Type: "template", ID: "111"}}}
}

// anomalyOf folds events into a dedupe key's aggregate.
func anomalyOf(evs ...domain.Event) *domain.Anomaly {
	a := &domain.Anomaly{}
	for _, e := range evs {
		a.Apply(e)
	}
	return a
}

// TestAnomalyLifecycle: given the stream of a dedupe key, when raising or
// resolving, then an event or nothing.
func TestAnomalyLifecycle(t *testing.T) {
	raised, err := anomalyOf().Raise(paused("evt-1"), anmNow)
	if err != nil || raised == nil {
		t.Fatalf("raise on a fresh key: %v %v", raised, err)
	}
	if !strings.HasPrefix(raised.AnomalyID, domain.PrefixAnomaly) || raised.ShopID != "shop_1" || raised.Severity != "P1" ||
		raised.Kind != domain.AnomalyTemplatePaused || raised.DedupeKey != "template:111" || raised.Cause != "evt-1" ||
		!raised.RaisedAt.Equal(anmNow) || len(raised.Resources) != 1 {
		t.Fatalf("raised: %+v", raised)
	}
	again, _ := anomalyOf().Raise(paused("evt-1"), anmNow.Add(time.Hour))
	if again == nil || again.AnomalyID != raised.AnomalyID {
		t.Fatalf("the id is not derived from key and cause: %v vs %v", again, raised)
	}
	resolved := anomalyOf(raised).Resolve("shop_1", "template:111", "evt-3", "approved", 0, anmNow.Add(time.Hour))
	if resolved == nil || resolved.AnomalyID != raised.AnomalyID || resolved.Kind != domain.AnomalyTemplatePaused ||
		resolved.Cause != "evt-3" || resolved.Reason != "approved" {
		t.Fatalf("resolved: %+v", resolved)
	}
	reraised, _ := anomalyOf(raised, resolved).Raise(paused("evt-4"), anmNow.Add(2*time.Hour))

	for _, c := range []struct {
		name  string
		given []domain.Event
		cause string
		want  bool // an AnomalyRaised
	}{
		{"fresh key", nil, "evt-1", true},
		{"open: another cause is deduped", []domain.Event{raised}, "evt-2", false},
		{"open: the same cause redelivered", []domain.Event{raised}, "evt-1", false},
		{"resolved: the raising cause redelivered", []domain.Event{raised, resolved}, "evt-1", false},
		{"resolved: the resolving cause as a raise", []domain.Event{raised, resolved}, "evt-3", false},
		{"resolved: a new cause opens a new one", []domain.Event{raised, resolved}, "evt-4", true},
		{"re-raised and open", []domain.Event{raised, resolved, reraised}, "evt-5", false},
	} {
		got, err := anomalyOf(c.given...).Raise(paused(c.cause), anmNow)
		if err != nil || (got != nil) != c.want {
			t.Errorf("%s: %+v %v, want raised=%v", c.name, got, err, c.want)
		}
	}
	if reraised == nil || reraised.AnomalyID == raised.AnomalyID {
		t.Fatalf("re-raised after resolve: %+v (first %s)", reraised, raised.AnomalyID)
	}

	for _, c := range []struct {
		name  string
		given []domain.Event
		cause string
		want  string // the resolved anomaly's id, "" for none
	}{
		{"nothing open", nil, "evt-3", ""},
		{"open", []domain.Event{raised}, "evt-3", raised.AnomalyID},
		{"already resolved", []domain.Event{raised, resolved}, "evt-9", ""},
		{"the resolving cause redelivered after a re-raise", []domain.Event{raised, resolved, reraised}, "evt-3", ""},
		{"the re-raised one", []domain.Event{raised, resolved, reraised}, "evt-6", reraised.AnomalyID},
	} {
		got := anomalyOf(c.given...).Resolve("shop_1", "template:111", c.cause, "approved", 0, anmNow)
		switch {
		case c.want == "" && got != nil:
			t.Errorf("%s: resolved %+v, want nothing", c.name, got)
		case c.want != "" && (got == nil || got.AnomalyID != c.want):
			t.Errorf("%s: resolved %+v, want %s", c.name, got, c.want)
		}
	}
}

// TestAnomalyValidation: a draft that breaks a rule is a 422 naming the
// field, even on a key whose anomaly is open.
func TestAnomalyValidation(t *testing.T) {
	long := strings.Repeat("x", 257)
	for _, c := range []struct {
		field string
		edit  func(*domain.AnomalyDraft)
	}{
		{"severity", func(d *domain.AnomalyDraft) { d.Severity = "P0" }},
		{"severity", func(d *domain.AnomalyDraft) { d.Severity = "" }},
		{"kind", func(d *domain.AnomalyDraft) { d.Kind = "template_sad" }},
		{"dedupe_key", func(d *domain.AnomalyDraft) { d.DedupeKey = "" }},
		{"dedupe_key", func(d *domain.AnomalyDraft) { d.DedupeKey = long }},
		{"cause", func(d *domain.AnomalyDraft) { d.Cause = "" }},
		{"cause", func(d *domain.AnomalyDraft) { d.Cause = long }},
		{"title", func(d *domain.AnomalyDraft) { d.Title = "   " }},
		{"title", func(d *domain.AnomalyDraft) { d.Title = strings.Repeat("t", 201) }},
		{"summary", func(d *domain.AnomalyDraft) { d.Summary = strings.Repeat("s", 2001) }},
		{"resources", func(d *domain.AnomalyDraft) { d.Resources = make([]domain.AnomalyResource, 21) }},
	} {
		d := paused("evt-1")
		c.edit(&d)
		for _, a := range []*domain.Anomaly{anomalyOf(), anomalyOf(&domain.AnomalyRaised{AnomalyID: "anm_1", Cause: "evt-0"})} {
			ev, err := a.Raise(d, anmNow)
			if got := errText(err); ev != nil || got != "validation_failed "+c.field {
				t.Errorf("%s: %+v %q, want validation_failed %s", c.field, ev, got, c.field)
			}
		}
	}
	// Every kind and severity listed is accepted; the title is trimmed.
	for _, k := range domain.AnomalyKinds() {
		for _, s := range domain.Severities() {
			d := paused("evt-" + k + s)
			d.Kind, d.Severity, d.Title = k, s, "  Title  "
			ev, err := anomalyOf().Raise(d, anmNow)
			if err != nil || ev == nil || ev.Title != "Title" {
				t.Errorf("%s %s: %+v %v", k, s, ev, err)
			}
		}
	}
}

// TestAnomalyCausePositions: a trigger of the log at or below the highest
// position the key recorded was decided already (a retried batch, a
// rebuilt reactor) and records nothing, even where its cause is new.
func TestAnomalyCausePositions(t *testing.T) {
	at := func(cause string, pos uint64) domain.AnomalyDraft {
		d := paused(cause)
		d.CausePosition = pos
		return d
	}
	raised, _ := anomalyOf().Raise(at("e5", 5), anmNow)
	if raised == nil || raised.CausePosition != 5 {
		t.Fatalf("raised: %+v", raised)
	}
	resolved := anomalyOf(raised).Resolve("shop_1", "template:111", "e7", "red", 7, anmNow)
	if resolved == nil || resolved.CausePosition != 7 {
		t.Fatalf("resolved: %+v", resolved)
	}
	// e6 was deduped while e5's anomaly was open: handled again after e7
	// resolved it, it raises nothing.
	if ev, _ := anomalyOf(raised, resolved).Raise(at("e6", 6), anmNow); ev != nil {
		t.Errorf("an earlier trigger handled again raised %+v", ev)
	}
	if ev, _ := anomalyOf(raised, resolved).Raise(at("e8", 8), anmNow); ev == nil {
		t.Error("a later trigger raised nothing")
	}
	if ev := anomalyOf(raised).Resolve("shop_1", "template:111", "e4", "x", 4, anmNow); ev != nil {
		t.Errorf("an earlier trigger resolved %+v", ev)
	}
	// Causes that are no log events (position 0) are decided by cause only.
	if ev, _ := anomalyOf(raised, resolved).Raise(at("auth_failures:x", 0), anmNow); ev == nil {
		t.Error("a cause without position raised nothing")
	}
}
