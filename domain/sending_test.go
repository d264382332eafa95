package domain_test

import (
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestWhatsAppSendingLimit(t *testing.T) {
	for _, c := range []struct {
		tier, rating string
		limit        int
		unlimited    bool
	}{
		{"TIER_1K", "GREEN", 1000, false},
		{"TIER_1K", "YELLOW", 500, false},
		{"TIER_1K", "RED", 0, false},
		{"TIER_50", "YELLOW", 25, false},
		{"TIER_UNLIMITED", "GREEN", 0, true},
		{"TIER_UNLIMITED", "RED", 0, false},
		{"", "UNKNOWN", 0, true},
		{"TIER_250", "", 250, false},
	} {
		l := domain.WhatsAppSendingLimit(c.tier, c.rating)
		if l.Limit != c.limit || l.Unlimited != c.unlimited {
			t.Errorf("%s %s: %+v, want %d unlimited %v", c.tier, c.rating, l, c.limit, c.unlimited)
		}
	}
	if ev := domain.NewSendingLimitChange("shop_1", "1555", "TIER_1K", "YELLOW", "e1", time.Now()); ev.Severity != "P2" || ev.DailyLimit != 500 {
		t.Errorf("YELLOW: %+v", ev)
	}
	if ev := domain.NewSendingLimitChange("shop_1", "1555", "TIER_1K", "RED", "e2", time.Now()); ev.Severity != "P1" || ev.DailyLimit != 0 {
		t.Errorf("RED: %+v", ev)
	}
	if ev := domain.NewSendingLimitChange("shop_1", "1555", "TIER_1K", "GREEN", "e3", time.Now()); ev.Severity != "" {
		t.Errorf("GREEN: %+v", ev)
	}
}

func TestRecordOutcomes(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	ref := func(id string) domain.MessageRef {
		return domain.MessageRef{MessageID: id, ShopID: "shop_1", CustomerID: "cus_1", Channel: "email", Intent: domain.IntentMarketing}
	}
	sent := domain.MessageOutcome{MessageRef: ref("msg_a"), Outcome: domain.OutcomeSent, ProviderMessageID: "p1"}
	failed := domain.MessageOutcome{MessageRef: ref("msg_b"), Outcome: domain.OutcomeFailed, ErrorCode: "smtp_550"}
	skipped := domain.MessageOutcome{MessageRef: ref("msg_c"), Outcome: domain.OutcomeSkipped, SkipReason: domain.SkipNoConsent}
	ev, err := domain.RecordOutcomes("shop_1", []domain.MessageOutcome{sent, failed, skipped}, now)
	if err != nil || len(ev.Outcomes) != 3 || ev.Outcomes[0].At != now || ev.Outcomes[1].Attempts != 1 {
		t.Fatalf("%+v %v", ev, err)
	}
	// The batch id depends on the message ids only, not their order.
	again, _ := domain.RecordOutcomes("shop_1", []domain.MessageOutcome{skipped, sent, failed}, now.Add(time.Hour))
	if again.BatchID != ev.BatchID {
		t.Fatalf("batch ids %s %s", again.BatchID, ev.BatchID)
	}
	for name, bad := range map[string][]domain.MessageOutcome{
		"none":                nil,
		"twice":               {sent, sent},
		"another shop":        {{MessageRef: domain.MessageRef{MessageID: "msg_d", ShopID: "shop_2", CustomerID: "cus_1", Channel: "email", Intent: "marketing"}, Outcome: "sent", ProviderMessageID: "x"}},
		"sent without id":     {{MessageRef: ref("msg_e"), Outcome: domain.OutcomeSent}},
		"failed without code": {{MessageRef: ref("msg_f"), Outcome: domain.OutcomeFailed}},
		"unknown skip":        {{MessageRef: ref("msg_g"), Outcome: domain.OutcomeSkipped, SkipReason: "bored"}},
		"unknown channel":     {{MessageRef: domain.MessageRef{MessageID: "msg_h", ShopID: "shop_1", CustomerID: "cus_1", Channel: "fax", Intent: "marketing"}, Outcome: "sent", ProviderMessageID: "x"}},
	} {
		if _, err := domain.RecordOutcomes("shop_1", bad, now); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMessageContentValidate(t *testing.T) {
	for _, c := range []struct {
		name, channel string
		content       domain.MessageContent
		complete      bool
		field         string
	}{
		{"email complete", "email", domain.MessageContent{Subject: "Hi {{first_name}}", Text: "x"}, true, ""},
		{"email no subject", "email", domain.MessageContent{Text: "x"}, true, "content.subject"},
		{"email draft", "email", domain.MessageContent{}, false, ""},
		{"email two lines", "email", domain.MessageContent{Subject: "a\nb"}, false, "content.subject"},
		{"email unknown merge", "email", domain.MessageContent{Subject: "a", Text: "{{password}}"}, true, "content.text"},
		{"email parameters", "email", domain.MessageContent{Parameters: []string{"a"}}, false, "content.parameters"},
		{"whatsapp", "whatsapp", domain.MessageContent{Parameters: []string{"{{first_name}}", "20%"}}, true, ""},
		{"whatsapp text", "whatsapp", domain.MessageContent{Text: "x"}, true, "content"},
		{"whatsapp empty param", "whatsapp", domain.MessageContent{Parameters: []string{" "}}, true, "content.parameters[0]"},
		{"sms", "sms", domain.MessageContent{Text: "Hi"}, true, ""},
	} {
		err := c.content.Validate("content", c.channel, c.complete)
		if got := fieldOf(err); got != c.field {
			t.Errorf("%s: field %q (%v), want %q", c.name, got, err, c.field)
		}
	}
}
