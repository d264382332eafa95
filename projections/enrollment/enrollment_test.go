package enrollment_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/enrollment"
	"github.com/cgp-platform/cgp/projections/journeys"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

var meta = commands.Meta{Actor: "test", Source: "cli"}

// fixture is a core whose commands run on the reactor's goroutine too (a
// shared clock), with helpers to record triggers and journeys.
type fixture struct {
	t     *testing.T
	core  *testenv.Core
	clock time.Time
}

func newFixture(t *testing.T) *fixture {
	start := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	var ticks atomic.Int64
	core := testenv.New(t, func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * time.Second) })
	return &fixture{t: t, core: core, clock: start}
}

func (f *fixture) enroll() enrollment.Enroll {
	return func(ctx context.Context, in domain.Enrollment) error {
		_, err := f.core.Commands.EnrollInJourney(ctx, commands.EnrollInJourney{Enrollment: in}, meta)
		return err
	}
}

func (f *fixture) order(id, customer string, updated time.Time) {
	f.t.Helper()
	if _, err := f.core.Commands.RecordOrder(context.Background(), commands.RecordOrder{Delivered: commands.Delivered{ShopID: "shop_a",
		Topic: "orders/fulfilled", EventID: eventlog.DeterministicID("test", id, updated.String())}, CustomerExternalID: customer,
		Snapshot: domain.OrderSnapshot{ExternalID: id, CreatedAt: f.clock, UpdatedAt: updated}}, meta); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) journey(reentry bool) string {
	f.t.Helper()
	_, j, err := f.core.Commands.CreateJourney(context.Background(), commands.CreateJourney{ShopID: "shop_a", Draft: domain.JourneyDraft{
		Name: "Reviews", Trigger: "orders/fulfilled", AllowReentry: reentry,
		Steps: []domain.JourneyStep{{Type: "send_message", Channel: "sms", Template: "t"}}}}, meta)
	if err != nil {
		f.t.Fatal(err)
	}
	return j.JourneyID
}

func (f *fixture) head() eventlog.Position {
	f.t.Helper()
	head, err := f.core.Log.HeadPosition(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return head
}

// settle waits until the read side folded the log and the log stopped
// growing (the reactor's enrollments are folded too).
func (f *fixture) settle(rs interface {
	WaitFor(testing.TB, eventlog.Position)
}) eventlog.Position {
	for {
		head := f.head()
		rs.WaitFor(f.t, head)
		if f.head() == head {
			return head
		}
	}
}

// log returns the events of the log.
func (f *fixture) log() []eventlog.Event {
	f.t.Helper()
	var out []eventlog.Event
	var after eventlog.Position
	for {
		batch, err := f.core.Log.ReadAll(context.Background(), after, 500)
		if err != nil {
			f.t.Fatal(err)
		}
		if len(batch) == 0 {
			return out
		}
		out = append(out, batch...)
		after = batch[len(batch)-1].Position
	}
}

// enrollmentIDs are the ids of the JourneyEnrollmentStarted events of the
// log, in log order.
func (f *fixture) enrollmentIDs() []string {
	var ids []string
	for _, e := range f.log() {
		if e.Type == "JourneyEnrollmentStarted" {
			ids = append(ids, e.ID.String())
		}
	}
	return ids
}

// TestReactorEnrollsOnceAndRebuildAppendsNothing: the reactor enrolls the
// customer of a later order of the trigger topic, not a guest, not a stale
// snapshot, not an order from before the journey; the read model shows
// the enrollment. A reactor started again from position 0 over that log
// (a data directory where enrollments happened, as at the first start of
// this reactor after an upgrade) appends nothing and gives the same rows.
func TestReactorEnrollsOnceAndRebuildAppendsNothing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	live := f.core.ReadSide(t, journeys.Projector(f.core.Codec), enrollment.Projector(f.core.Codec, f.enroll()))
	f.order("1", "42", f.clock) // before the journey
	jid := f.journey(false)
	later := f.clock.Add(time.Hour)
	f.order("1", "42", later)                   // a newer snapshot of the same order
	f.order("1", "42", later.Add(-time.Minute)) // stale
	f.order("2", "", f.clock)                   // a guest
	f.order("3", "42", f.clock)                 // same customer, no re-entry
	head := f.settle(live)
	q := journeys.NewQueries(live.DB())
	rows, next, err := q.Enrollments(ctx, jid, journeys.ListQuery{Shop: "shop_a", Limit: 10})
	if err != nil || next != nil || len(rows) != 1 || rows[0].CustomerID != domain.CustomerIDFromExternal("shop_a", "42") || rows[0].Status != "active" {
		t.Fatalf("enrollments: %+v %v %v", rows, next, err)
	}
	got, err := q.Journey(ctx, "shop_a", jid)
	if err != nil || got.Enrollments != 1 || got.Status != "active" {
		t.Fatalf("journey: %+v %v", got, err)
	}
	if _, err := q.Journey(ctx, "shop_b", jid); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop's journey: %v", err)
	}
	if n := len(f.enrollmentIDs()); n != 1 {
		t.Fatalf("%d enrollments in the log, want 1", n)
	}

	rebuilt := f.core.ReadSide(t, journeys.Projector(f.core.Codec), enrollment.Projector(f.core.Codec, f.enroll()))
	if after := f.settle(rebuilt); after != head {
		t.Fatalf("a reactor from position 0 appended: head %d → %d", head, after)
	}
	for table, order := range map[string]string{"journeys": "journey_id", "journey_enrollments": "enrollment_id", "enrollment_journeys": "journey_id"} {
		if a, b := testenv.Dump(t, live.DB(), table, order), testenv.Dump(t, rebuilt.DB(), table, order); !reflect.DeepEqual(a, b) {
			t.Fatalf("%s differs after rebuild:\n%v\n%v", table, a, b)
		}
	}
}

// TestPausedJourneyEnrollsNobody: who enrolls is decided as of each
// trigger: an order while the journey is paused enrolls nobody, one after
// it resumed enrolls its customer, and folding the log again later (the
// journey being active by then) decides the same.
func TestPausedJourneyEnrollsNobody(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	jid := f.journey(true)
	if _, _, err := f.core.Commands.PauseJourney(ctx, commands.PauseJourney{ShopID: "shop_a", JourneyID: jid}, meta); err != nil {
		t.Fatal(err)
	}
	f.order("p", "7", f.clock) // while paused
	if _, _, err := f.core.Commands.ResumeJourney(ctx, commands.ResumeJourney{ShopID: "shop_a", JourneyID: jid}, meta); err != nil {
		t.Fatal(err)
	}
	f.order("r", "8", f.clock) // after the resume
	live := f.core.ReadSide(t, journeys.Projector(f.core.Codec), enrollment.Projector(f.core.Codec, f.enroll()))
	f.settle(live)
	rows, _, err := journeys.NewQueries(live.DB()).Enrollments(ctx, jid, journeys.ListQuery{Shop: "shop_a", Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].CustomerID != domain.CustomerIDFromExternal("shop_a", "8") {
		t.Fatalf("enrollments: %+v %v", rows, err)
	}
}

// run runs the journeys read model and the reactor over the store at path
// until both folded the log up to its head, then stops them (a server
// stopped there).
func run(t *testing.T, f *fixture, path string) {
	t.Helper()
	store, err := rmsqlite.Open(rmsqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rt, err := projections.New(projections.Config{Log: f.core.Log, Store: store, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []projections.Projector{journeys.Projector(f.core.Codec), enrollment.Projector(f.core.Codec, f.enroll())} {
		if err := store.Migrate(context.Background(), p.Name, p.Migrations); err != nil {
			t.Fatal(err)
		}
		if err := rt.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- rt.Run(context.Background()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // generous: a loaded machine
	defer cancel()
	for {
		head := f.head()
		if err := rt.WaitFor(ctx, head); err != nil {
			t.Fatal(err)
		}
		if f.head() == head {
			break
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil && !errors.Is(err, projections.ErrClosed) {
		t.Fatal(err)
	}
}

// TestReactorRestartedMidStreamNeitherRepeatsNorSkips: a reactor stopped
// between triggers and started again from its checkpoint enrolls each
// later trigger once, and none of the earlier ones again.
func TestReactorRestartedMidStreamNeitherRepeatsNorSkips(t *testing.T) {
	f := newFixture(t)
	path := filepath.Join(t.TempDir(), "readmodels.db")
	jid := f.journey(true) // re-entry: every trigger enrolls
	f.order("a1", "1", f.clock)
	f.order("a2", "2", f.clock)
	run(t, f, path)
	first := f.enrollmentIDs()
	if len(first) != 2 {
		t.Fatalf("%d enrollments before the restart, want 2", len(first))
	}
	f.order("b1", "1", f.clock) // the same customer again
	f.order("b2", "3", f.clock)
	f.order("b3", "4", f.clock)
	run(t, f, path)

	var want []string
	for _, e := range f.log() {
		if e.Type == "OrderRecorded" {
			want = append(want, eventlog.DeterministicID("enroll", jid, e.ID.String()).String())
		}
	}
	got := f.enrollmentIDs()
	if len(want) != 5 || !slices.Equal(got, want) {
		t.Fatalf("enrollments %v, want one per trigger in order %v", got, want)
	}
	store, err := rmsqlite.Open(rmsqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if cp, err := store.Checkpoint(context.Background(), enrollment.Name); err != nil || cp != f.head() {
		t.Fatalf("checkpoint %d (%v), head %d", cp, err, f.head())
	}
}

// TestEditedJourneysEnrollWithTheirVersion: an enrollment runs the steps
// version current at its trigger (v1 before an edit, v2 after it); the
// read model keeps every version's steps for the runner; an archived
// journey enrolls nobody; a rebuild gives the same rows.
func TestEditedJourneysEnrollWithTheirVersion(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	jid := f.journey(false)
	f.order("v1", "71", f.clock)
	v2 := []domain.JourneyStep{{Type: "wait", Hours: 2}, {Type: "condition", Condition: domain.ConditionNotOrderedSinceEnrollment},
		{Type: "send_message", Channel: "email", Subject: "Hi {{first_name}}", Text: "From {{shop_name}}"}}
	edit := func(p domain.JourneyPatch) {
		t.Helper()
		if _, ev, err := f.core.Commands.UpdateJourney(ctx, commands.UpdateJourney{ShopID: "shop_a", JourneyID: jid, Patch: p}, meta); err != nil || ev == nil {
			t.Fatalf("edit: %+v %v", ev, err)
		}
	}
	edit(domain.JourneyPatch{Steps: &v2})
	f.order("v2", "72", f.clock)
	archived := domain.JourneyStatusArchived
	edit(domain.JourneyPatch{Status: &archived})
	f.order("v3", "73", f.clock)
	live := f.core.ReadSide(t, journeys.Projector(f.core.Codec), enrollment.Projector(f.core.Codec, f.enroll()))
	head := f.settle(live)
	q := journeys.NewQueries(live.DB())
	rows, _, err := q.Enrollments(ctx, jid, journeys.ListQuery{Shop: "shop_a", Limit: 10})
	if err != nil || len(rows) != 2 {
		t.Fatalf("enrollments: %+v %v", rows, err)
	}
	versions := map[string]int{}
	for _, r := range rows {
		versions[r.CustomerID] = r.StepsVersion
	}
	if versions[domain.CustomerIDFromExternal("shop_a", "71")] != 1 || versions[domain.CustomerIDFromExternal("shop_a", "72")] != 2 {
		t.Fatalf("steps versions: %v", versions)
	}
	j, err := q.Journey(ctx, "shop_a", jid)
	if err != nil || j.Version != 3 || j.Status != domain.JourneyStatusArchived || len(j.Steps) != 3 {
		t.Fatalf("journey: %+v %v", j, err)
	}
	for version, want := range map[int]int{0: 1, 1: 1, 2: 3, 3: 3} {
		steps, err := q.Steps(ctx, "shop_a", jid, version)
		if err != nil || len(steps) != want {
			t.Fatalf("steps of version %d: %+v %v", version, steps, err)
		}
	}
	if steps, _ := q.Steps(ctx, "shop_a", jid, 2); steps[2].Subject != "Hi {{first_name}}" || steps[1].Otherwise != domain.OtherwiseExit {
		t.Fatalf("steps of version 2: %+v", steps)
	}
	for _, c := range []struct {
		shop    string
		version int
	}{{"shop_b", 1}, {"shop_a", 4}} {
		if _, err := q.Steps(ctx, c.shop, jid, c.version); domain.ErrorCode(err) != domain.CodeNotFound {
			t.Fatalf("steps of %s v%d: %v", c.shop, c.version, err)
		}
	}
	rebuilt := f.core.ReadSide(t, journeys.Projector(f.core.Codec), enrollment.Projector(f.core.Codec, f.enroll()))
	if after := f.settle(rebuilt); after != head {
		t.Fatalf("a reactor from position 0 appended: head %d → %d", head, after)
	}
	for table, order := range map[string]string{"journeys": "journey_id", "journey_enrollments": "enrollment_id",
		"enrollment_journeys": "journey_id", "journey_versions": "journey_id, version"} {
		if a, b := testenv.Dump(t, live.DB(), table, order), testenv.Dump(t, rebuilt.DB(), table, order); !reflect.DeepEqual(a, b) {
			t.Fatalf("%s differs after rebuild:\n%v\n%v", table, a, b)
		}
	}
}
