package webhooks

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/cgp-platform/cgp/domain"
)

// The fold of recorded attempts sets each delivery's state and attempt
// log and the subscription's failing period; an attempt older than the
// one on record, or of a delivery gone, changes nothing.
func TestFoldAttempts(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(migrations[0].SQL); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO wh_subscriptions (id, shop_id, url, event_types, enabled, secret) VALUES ('whs_1', 'shop_1', 'u', '[]', 1, 's');
	INSERT INTO wh_deliveries (id, subscription_id, shop_id, event_id, event_type, position, created_at, state) VALUES
	('whd_a', 'whs_1', 'shop_1', 'evt_a', 'order.paid', 1, 0, 'pending'), ('whd_b', 'whs_1', 'shop_1', 'evt_b', 'order.paid', 2, 0, 'pending')`); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	fold := func(attempts ...domain.WebhookAttempt) {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := foldAttempts(ctx, tx, &domain.WebhookAttemptsRecorded{ShopID: "shop_1", Attempts: attempts}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	state := func(id string) (st string, attempts int, next int64, logged int) {
		t.Helper()
		if err := db.QueryRow(`SELECT state, attempts, next_attempt_at, (SELECT COUNT(*) FROM wh_attempts WHERE delivery_id = ?1)
		FROM wh_deliveries WHERE id = ?1`, id).Scan(&st, &attempts, &next, &logged); err != nil {
			t.Fatal(err)
		}
		return
	}
	failingSince := func() (since int64) {
		t.Helper()
		if err := db.QueryRow(`SELECT failing_since FROM wh_subscriptions WHERE id = 'whs_1'`).Scan(&since); err != nil {
			t.Fatal(err)
		}
		return
	}
	failed := func(id string, n int, when time.Time) domain.WebhookAttempt {
		return domain.WebhookAttempt{DeliveryID: id, SubscriptionID: "whs_1", EventType: "order.paid", Attempt: n,
			Outcome: domain.WebhookAttemptFailed, Status: 500, ErrorCode: "http_500", At: when, NextAttemptAt: when.Add(time.Minute)}
	}

	fold(failed("whd_a", 1, at), failed("whd_b", 1, at.Add(time.Second)))
	if st, n, next, logged := state("whd_a"); st != StatePending || n != 1 || next != at.Add(time.Minute).UnixMilli() || logged != 1 {
		t.Fatalf("after a failure: %s, %d attempts, next %d, %d logged", st, n, next, logged)
	}
	if failingSince() != at.Add(time.Second).UnixMilli() {
		t.Fatalf("failing since %d, want the batch's last failure", failingSince())
	}
	ok := failed("whd_a", 2, at.Add(time.Minute))
	ok.Outcome, ok.Status, ok.ErrorCode, ok.NextAttemptAt, ok.Answer = domain.WebhookAttemptSucceeded, 200, "", time.Time{}, "ok"
	fold(ok, failed("whd_a", 1, at), failed("whd_gone", 1, at)) // a late repeat of attempt 1, a delivery gone
	if st, n, _, logged := state("whd_a"); st != StateSucceeded || n != 2 || logged != 2 {
		t.Fatalf("after a success and a late failure: %s, %d attempts, %d logged", st, n, logged)
	}
	if failingSince() != 0 {
		t.Fatalf("failing since %d after a success, want 0", failingSince())
	}
	var orphans int
	if err := db.QueryRow(`SELECT COUNT(*) FROM wh_attempts WHERE delivery_id = 'whd_gone'`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("%d attempts of a delivery gone (%v)", orphans, err)
	}
	gaveUp := failed("whd_b", 2, at.Add(2*time.Minute))
	gaveUp.Outcome, gaveUp.NextAttemptAt = domain.WebhookAttemptGivenUp, time.Time{}
	fold(gaveUp)
	if st, n, next, _ := state("whd_b"); st != StateFailed || n != 2 || next != 0 {
		t.Fatalf("after giving up: %s, %d attempts, next %d", st, n, next)
	}
}
