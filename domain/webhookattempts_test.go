package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func whAttempt(delivery string, n int, outcome string) domain.WebhookAttempt {
	a := domain.WebhookAttempt{DeliveryID: delivery, SubscriptionID: "whs_1", EventType: "order.paid", Attempt: n, Outcome: outcome,
		At: whNow, LatencyMS: 12}
	switch outcome {
	case domain.WebhookAttemptSucceeded:
		a.Status, a.Answer = 200, `{"ok":true}`
	case domain.WebhookAttemptFailed:
		a.Status, a.ErrorCode, a.NextAttemptAt = 500, "http_500", whNow.Add(10*time.Second)
	case domain.WebhookAttemptGivenUp:
		a.ErrorCode = "timeout"
	}
	return a
}

// A batch of attempts is recorded once per (delivery, attempt), under an
// id that does not depend on the order; each outcome carries what it
// must and nothing it must not.
func TestRecordWebhookAttempts(t *testing.T) {
	ok := []domain.WebhookAttempt{whAttempt("whd_1", 1, domain.WebhookAttemptSucceeded), whAttempt("whd_2", 3, domain.WebhookAttemptFailed),
		whAttempt("whd_3", 10, domain.WebhookAttemptGivenUp)}
	ev, err := domain.RecordWebhookAttempts("shop_1", ok)
	if err != nil || len(ev.Attempts) != 3 || ev.ShopID != "shop_1" || ev.BatchID == "" {
		t.Fatalf("RecordWebhookAttempts = %+v, %v", ev, err)
	}
	again, _ := domain.RecordWebhookAttempts("shop_1", []domain.WebhookAttempt{ok[2], ok[0], ok[1]})
	other, _ := domain.RecordWebhookAttempts("shop_2", ok)
	if again.BatchID != ev.BatchID || other.BatchID == ev.BatchID {
		t.Errorf("batch ids: %s, reordered %s, another shop %s", ev.BatchID, again.BatchID, other.BatchID)
	}
	bad := func(mod func(a *domain.WebhookAttempt)) []domain.WebhookAttempt {
		a := whAttempt("whd_1", 1, domain.WebhookAttemptFailed)
		mod(&a)
		return []domain.WebhookAttempt{a}
	}
	for name, attempts := range map[string][]domain.WebhookAttempt{
		"none":                nil,
		"too many":            make([]domain.WebhookAttempt, domain.MaxWebhookAttemptsPerEvent+1),
		"twice":               {whAttempt("whd_1", 1, domain.WebhookAttemptFailed), whAttempt("whd_1", 1, domain.WebhookAttemptSucceeded)},
		"no delivery id":      bad(func(a *domain.WebhookAttempt) { a.DeliveryID = "x" }),
		"no subscription":     bad(func(a *domain.WebhookAttempt) { a.SubscriptionID = "" }),
		"attempt 0":           bad(func(a *domain.WebhookAttempt) { a.Attempt = 0 }),
		"no time":             bad(func(a *domain.WebhookAttempt) { a.At = time.Time{} }),
		"failed without next": bad(func(a *domain.WebhookAttempt) { a.NextAttemptAt = time.Time{} }),
		"failed without code": bad(func(a *domain.WebhookAttempt) { a.ErrorCode = "" }),
		"given up with next":  bad(func(a *domain.WebhookAttempt) { a.Outcome = domain.WebhookAttemptGivenUp }),
		"succeeded with a code": bad(func(a *domain.WebhookAttempt) {
			a.Outcome, a.NextAttemptAt = domain.WebhookAttemptSucceeded, time.Time{}
		}),
		"unknown outcome":       bad(func(a *domain.WebhookAttempt) { a.Outcome = "sent" }),
		"answer too long":       bad(func(a *domain.WebhookAttempt) { a.Answer = strings.Repeat("x", domain.MaxWebhookAttemptAnswer+1) }),
		"answer not UTF-8 text": bad(func(a *domain.WebhookAttempt) { a.Answer = "\xff" }),
	} {
		if _, err := domain.RecordWebhookAttempts("shop_1", attempts); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("%s: err %v, want a validation error", name, err)
		}
	}
}
