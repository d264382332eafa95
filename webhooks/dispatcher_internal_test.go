package webhooks

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/outbound"
)

// Attempts under way together when the first failure comes back count as
// one failure: the endpoint backs off by the schedule's first step, not
// its third; an attempt started after it counts again; Retry-After sets
// the backoff; a success closes the breaker.
func TestBreakerCountsConcurrentFailuresOnce(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	d := NewDispatcher(DispatcherConfig{Now: func() time.Time { return now }})
	s := &sub{id: "whs_1"}
	ep := d.endpoint(s.id)
	started := now.Add(-time.Second)
	ep.sending = 5
	for i := 0; i < 5; i++ {
		d.answered(result{sub: s, at: started, reason: "http_500"})
	}
	if ep.failures != 1 || !ep.blockedUntil.Equal(now.Add(10*time.Second)) || ep.sending != 0 {
		t.Fatalf("after 5 concurrent failures: failures %d, blocked until %v", ep.failures, ep.blockedUntil)
	}
	now = now.Add(10 * time.Second)
	ep.sending = 1
	d.answered(result{sub: s, at: now.Add(-time.Millisecond), reason: "timeout"})
	if ep.failures != 2 || !ep.blockedUntil.Equal(now.Add(time.Minute)) {
		t.Fatalf("the probe's failure: failures %d, blocked until %v", ep.failures, ep.blockedUntil)
	}
	now = now.Add(time.Minute)
	ep.sending = 1
	d.answered(result{sub: s, at: now, reason: "http_429", resp: outbound.Response{Status: 429, RetryAfter: 30 * time.Minute}})
	if !ep.blockedUntil.Equal(now.Add(30 * time.Minute)) {
		t.Fatalf("Retry-After: blocked until %v", ep.blockedUntil)
	}
	ep.sending = 1
	d.answered(result{sub: s, at: now})
	if ep.failures != 0 || !ep.blockedUntil.IsZero() {
		t.Fatalf("after a success: failures %d, blocked until %v", ep.failures, ep.blockedUntil)
	}
}

// An answer is kept as valid UTF-8 text of at most
// domain.MaxWebhookAttemptAnswer bytes, cut on a character's boundary.
func TestAnswerKeepsValidTextWithinTheBound(t *testing.T) {
	long := strings.Repeat("a", domain.MaxWebhookAttemptAnswer-1) + "é and more"
	for in, want := range map[string]string{
		`{"ok":true}`: `{"ok":true}`,
		"\xffok":      "\uFFFDok",
		long:          strings.Repeat("a", domain.MaxWebhookAttemptAnswer-1),
	} {
		if got := answer([]byte(in)); got != want || len(got) > domain.MaxWebhookAttemptAnswer || !utf8.ValidString(got) {
			t.Errorf("answer(%.20q…) = %.20q… (%d bytes), want %.20q…", in, got, len(got), want)
		}
	}
}
