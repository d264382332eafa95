package gdprrequests_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/gdprrequests"
)

var meta = commands.Meta{Actor: "test", Source: "cli"}

// TestRequestLifecycle: a data request is pending and due at once; a
// failed attempt makes it retrying with its reason and next attempt; the
// completion closes it; a late failure of a racing server changes
// nothing; repeats append nothing. The settings fall back to the shop's
// contact e-mail.
func TestRequestLifecycle(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { return start })
	var requested atomic.Int32
	rs := core.ReadSide(t, gdprrequests.Projector(core.Codec, func() { requested.Add(1) }))
	q := gdprrequests.NewQueries(rs.DB())

	_, err := core.Commands.RecordPrivacyRequest(ctx, commands.RecordPrivacyRequest{
		Delivered: commands.Delivered{ShopID: "shop_a", Topic: commands.PrivacyDataRequest, EventID: uuid.New()},
		RequestID: "9912", CustomerExternalID: "42", Email: "a@example.com", Phone: "+1 650 555 1234"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	head := func() eventlog.Position {
		p, err := core.Log.HeadPosition(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	rs.WaitFor(t, head())
	rows, _, err := q.Requests(ctx, "shop_a", gdprrequests.Page{Limit: 10})
	if err != nil || len(rows) != 1 {
		t.Fatalf("%v %v", rows, err)
	}
	r := rows[0]
	if r.Status != domain.GDPRStatusPending || r.CustomerID != domain.CustomerIDFromExternal("shop_a", "42") || r.PlatformRequestID != "9912" ||
		!r.ReceivedAt.Equal(start) || !r.DueAt.Equal(start.Add(30*24*time.Hour)) || !r.NextAttemptAt.Equal(start) || requested.Load() != 1 {
		t.Fatalf("pending: %+v (woken %d)", r, requested.Load())
	}
	if due, _ := q.Due(ctx, start, 10); len(due) != 1 {
		t.Fatalf("due: %v", due)
	}
	record := func(id string, ev domain.Event) {
		t.Helper()
		data, err := core.Codec.Encode(ctx, eventlog.DeterministicID(r.ID, id), "shop_a", ev, start, eventlog.Metadata{Actor: "system:test"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := core.Log.Append(ctx, domain.GDPRRequestStream(r.ID), eventlog.Any(), data); err != nil {
			t.Fatal(err)
		}
		rs.WaitFor(t, head())
	}
	next := start.Add(time.Minute)
	failed := &domain.DataExportAttemptFailed{RequestID: r.ID, ShopID: "shop_a", Attempt: 1, Channel: "email", Reason: "smtp_failed",
		AttemptedAt: start, NextAttemptAt: next}
	record("f1", failed)
	record("f1", failed) // a repeat
	got, err := q.Request(ctx, "shop_a", r.ID)
	if err != nil || got.Status != domain.GDPRStatusRetrying || got.Attempts != 1 || got.LastReason != "smtp_failed" || !got.NextAttemptAt.Equal(next) {
		t.Fatalf("retrying: %+v %v", got, err)
	}
	if due, _ := q.Due(ctx, start, 10); len(due) != 0 {
		t.Errorf("due before its next attempt: %v", due)
	}
	record("done", &domain.GdprRequestCompleted{RequestID: r.ID, ShopID: "shop_a", Kind: domain.GDPRKindDataRequest, Channel: "email",
		Status: domain.GDPRStatusCompleted, CompletedAt: next, Bytes: 123, SHA256: "ab"})
	record("f2", &domain.DataExportAttemptFailed{RequestID: r.ID, ShopID: "shop_a", Attempt: 2, Channel: "webhook", Reason: "timeout",
		AttemptedAt: next, NextAttemptAt: next.Add(time.Hour)})
	got, _ = q.Request(ctx, "shop_a", r.ID)
	if got.Status != domain.GDPRStatusCompleted || got.Attempts != 2 || got.Channel != "email" || got.Bytes != 123 || !got.CompletedAt.Equal(next) ||
		!got.NextAttemptAt.IsZero() {
		t.Errorf("completed: %+v", got)
	}
	if due, _ := q.Due(ctx, next.Add(24*time.Hour), 10); len(due) != 0 {
		t.Errorf("a completed request is due: %v", due)
	}
	if _, err := q.Request(ctx, "shop_b", r.ID); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("another shop's request: %v", err)
	}
	if s, err := q.Settings(ctx, "shop_unknown"); err != nil || s.DataRequestURL != "" || s.ContactEmail != "" {
		t.Errorf("unknown shop settings: %+v %v", s, err)
	}
}
