package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

var msgNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func TestMessagingEventsAreInTheCatalogue(t *testing.T) {
	c := domain.Events()
	for _, name := range []string{"WhatsAppAccountConnected", "WhatsAppAccountCredentialsRotated", "MessagingProviderConnected",
		"MessagingProviderTokenRotated", "WhatsAppMessageReceived", "MessageStatusReported", "WhatsAppTemplateStatusUpdated",
		"WhatsAppPhoneQualityUpdated", "WhatsAppAccountAlertReceived", "WhatsAppAccountReviewUpdated"} {
		if c.Version(name) != 1 {
			t.Errorf("%s: version %d", name, c.Version(name))
		}
	}
}

func TestInboundQueueByPlan(t *testing.T) {
	for plan, want := range map[domain.Plan]string{
		domain.PlanStarter: domain.QueueHuman, domain.PlanGrowth: domain.QueueHuman, domain.PlanPro: domain.QueueHuman,
		domain.PlanProPlus: domain.QueueAIConcierge, domain.PlanAgency: domain.QueueAIConcierge,
		domain.PlanEnterprise: domain.QueueAIConcierge, domain.Plan("platinum"): domain.QueueHuman,
	} {
		if got := domain.InboundQueue(plan); got != want {
			t.Errorf("InboundQueue(%s) = %s, want %s", plan, got, want)
		}
	}
}

func TestConnectWhatsApp(t *testing.T) {
	shop := &domain.Shop{ID: "shop_a", Exists: true}
	in := domain.WhatsAppConnection{BusinessAccountID: "102290129340398", PhoneNumberID: "106540352242922",
		AppSecret: "0123456789abcdef0123456789abcdef", VerifyToken: "verify-me-please"}

	ev, err := domain.ConnectWhatsApp(shop, &domain.WhatsAppAccount{}, in, msgNow)
	connected, ok := ev.(*domain.WhatsAppAccountConnected)
	if err != nil || !ok || connected.ShopID != "shop_a" || connected.VerifyTokenHash != domain.HashToken(in.VerifyToken) {
		t.Fatalf("first connection: %#v %v", ev, err)
	}
	raw, _ := json.Marshal(ev)
	if strings.Contains(string(raw), in.VerifyToken) {
		t.Error("the verify token itself is in the event")
	}

	var acc domain.WhatsAppAccount
	acc.Apply(connected)
	if ev, err := domain.ConnectWhatsApp(shop, &acc, in, msgNow); err != nil {
		t.Fatal(err)
	} else if _, ok := ev.(*domain.WhatsAppAccountCredentialsRotated); !ok {
		t.Fatalf("second connection by the same shop: %T", ev)
	}
	other := &domain.Shop{ID: "shop_b", Exists: true}
	if _, err := domain.ConnectWhatsApp(other, &acc, in, msgNow); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("another shop's account: %v", err)
	}
	withToken := in
	withToken.AccessToken = "EAAGm0PX4ZCpsBAK" + strings.Repeat("x", 200)
	if _, err := domain.ConnectWhatsApp(other, &acc, withToken, msgNow); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("another shop's account: %v", err)
	}
	if _, err := domain.ConnectWhatsApp(&domain.Shop{}, &domain.WhatsAppAccount{}, in, msgNow); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("missing shop: %v", err)
	}
	for field, mod := range map[string]func(*domain.WhatsAppConnection){
		"business_account_id": func(c *domain.WhatsAppConnection) { c.BusinessAccountID = "waba-1" },
		"phone_number_id":     func(c *domain.WhatsAppConnection) { c.PhoneNumberID = "" },
		"app_secret":          func(c *domain.WhatsAppConnection) { c.AppSecret = "short" },
		"verify_token":        func(c *domain.WhatsAppConnection) { c.VerifyToken = "has a space" },
		"access_token":        func(c *domain.WhatsAppConnection) { c.AccessToken = "EAAG with a space in it" },
	} {
		c := in
		mod(&c)
		_, err := domain.ConnectWhatsApp(shop, &domain.WhatsAppAccount{}, c, msgNow)
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.CodeInvalid || de.Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
}

func TestConnectProvider(t *testing.T) {
	shop := &domain.Shop{ID: "shop_a", Exists: true}
	tok := domain.NewProviderToken()
	if !domain.ValidProviderToken(tok) || !strings.HasPrefix(tok, "cpt_") || domain.ValidProviderToken(tok+"x") || domain.ValidProviderToken("cpt_"+strings.Repeat("!", 32)) {
		t.Fatalf("token syntax: %q", tok)
	}
	ev, err := domain.ConnectProvider(shop, &domain.MessagingProvider{}, "twilio", tok, msgNow)
	c, ok := ev.(*domain.MessagingProviderConnected)
	if err != nil || !ok || c.TokenHash != domain.HashToken(tok) {
		t.Fatalf("connect: %#v %v", ev, err)
	}
	conn := &domain.MessagingProvider{}
	conn.Apply(c)
	if ev, _ := domain.ConnectProvider(shop, conn, "twilio", domain.NewProviderToken(), msgNow); ev.EventType() != "MessagingProviderTokenRotated" {
		t.Fatalf("reconnect: %T", ev)
	}
	for _, bad := range []string{"", "Twilio", "9lives", "with space", strings.Repeat("a", 41)} {
		if _, err := domain.ConnectProvider(shop, &domain.MessagingProvider{}, bad, tok, msgNow); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("provider %q: %v", bad, err)
		}
	}
}

func TestReceiveMessage(t *testing.T) {
	in := domain.InboundMessage{BusinessAccountID: "1", MessageID: "wamid.1", From: "16505551234", ProfileName: "Sheena",
		Type: "text", Text: "hello"}
	for plan, queue := range map[domain.Plan]string{domain.PlanProPlus: domain.QueueAIConcierge, domain.PlanGrowth: domain.QueueHuman} {
		ev, err := domain.ReceiveMessage(&domain.Shop{ID: "shop_a", Plan: plan, Exists: true}, in, msgNow)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Queue != queue || ev.CustomerID != domain.CustomerIDFromExternal("shop_a", "phone:16505551234") ||
			ev.Subject() != ev.CustomerID || !ev.SentAt.Equal(msgNow) || *ev.Text != "hello" {
			t.Errorf("%s: %+v", plan, ev)
		}
		if strings.Contains(ev.CustomerID, "16505551234") {
			t.Error("customer id carries the phone number")
		}
	}
	// Every personal field is a top-level JSON field of the event.
	ev, _ := domain.ReceiveMessage(&domain.Shop{ID: "shop_a", Exists: true}, in, msgNow)
	var doc map[string]any
	raw, _ := json.Marshal(ev)
	_ = json.Unmarshal(raw, &doc)
	for _, f := range ev.PersonalFields() {
		if _, ok := doc[f]; !ok {
			t.Errorf("personal field %s not in %s", f, raw)
		}
	}
	for _, mod := range []func(*domain.InboundMessage){
		func(m *domain.InboundMessage) { m.MessageID = " " },
		func(m *domain.InboundMessage) { m.From = "" },
		func(m *domain.InboundMessage) { m.Type = "" },
		func(m *domain.InboundMessage) { m.Text = string([]byte{0xff}) },
		func(m *domain.InboundMessage) { m.MessageID = strings.Repeat("x", 257) },
	} {
		m := in
		mod(&m)
		if _, err := domain.ReceiveMessage(&domain.Shop{ID: "shop_a", Exists: true}, m, msgNow); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("%+v: %v", m, err)
		}
	}
}

func TestReportedFacts(t *testing.T) {
	st, err := domain.ReportMessageStatus("shop_a", domain.MessageStatus{MessageID: "wamid.1", Status: "failed", RecipientID: "1555", ErrorCode: "131047"}, msgNow)
	if err != nil || st.CustomerID != domain.CustomerIDFromPhone("shop_a", "1555") || !st.At.Equal(msgNow) || st.ErrorCode != "131047" {
		t.Fatalf("status: %+v %v", st, err)
	}
	raw, _ := json.Marshal(st)
	if strings.Contains(string(raw), "1555") {
		t.Errorf("status event keeps the recipient's number: %s", raw)
	}
	if _, err := domain.ReportMessageStatus("shop_a", domain.MessageStatus{MessageID: "wamid.1"}, msgNow); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("status without status: %v", err)
	}
	for event, state := range map[string]string{"APPROVED": "approved", "REJECTED": "rejected", "PAUSED": "paused", "PENDING_DELETION": "PENDING_DELETION"} {
		if got := domain.TemplateState(event); got != state {
			t.Errorf("TemplateState(%s) = %s", event, got)
		}
	}
	if _, err := domain.UpdateTemplateStatus("shop_a", domain.TemplateStatus{Event: "APPROVED"}, msgNow); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("template without id: %v", err)
	}
	for _, c := range []struct{ stated, event, want string }{
		{"", "FLAGGED", "RED"}, {"", "UNFLAGGED", "UNKNOWN"}, {"", "THROUGHPUT_UPGRADE", ""},
		{"YELLOW", "DOWNGRADE", "YELLOW"}, {"PURPLE", "FLAGGED", "PURPLE"},
	} {
		if got := domain.QualityRating(c.stated, c.event); got != c.want {
			t.Errorf("QualityRating(%q, %q) = %q", c.stated, c.event, got)
		}
	}
	if _, err := domain.UpdatePhoneQuality("shop_a", domain.PhoneQuality{Event: "FLAGGED"}, msgNow); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("quality without number: %v", err)
	}
	if _, err := domain.ReceiveAccountAlert("shop_a", domain.AccountAlert{BusinessAccountID: "1"}, msgNow); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("alert without type: %v", err)
	}
	if r, err := domain.UpdateAccountReview("shop_a", "1", "SOMETHING_NEW", time.Time{}, msgNow); err != nil || r.Decision != "SOMETHING_NEW" {
		t.Errorf("unknown decision: %+v %v", r, err)
	}
	if _, err := domain.UpdateAccountReview("shop_a", "1", "", time.Time{}, msgNow); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("empty decision: %v", err)
	}
}

func TestMessagingStreamsCarryNoPersonalData(t *testing.T) {
	for _, s := range []string{
		domain.MessageStream("shop_a", "wamid.16505551234"), domain.WhatsAppNumberStream("shop_a", "15550783881"),
		domain.MessagingProviderStream("shop_a", "twilio"), domain.WhatsAppTemplateStream("shop_a", "1689556908129832"),
	} {
		if strings.Contains(s, "1555") || strings.Contains(s, "16505551234") || strings.Count(s, "-") != 1 {
			t.Errorf("stream %q", s)
		}
	}
	if domain.MessageStream("shop_a", "m1") == domain.MessageStream("shop_b", "m1") {
		t.Error("two shops share a message stream")
	}
}

// TestConnectWhatsAppAccessToken: the access token is optional, kept in the
// event (and shown "[set]"), and connecting again with only a new token is
// a rotation that carries it.
func TestConnectWhatsAppAccessToken(t *testing.T) {
	shop := &domain.Shop{ID: "shop_a", Exists: true}
	in := domain.WhatsAppConnection{BusinessAccountID: "102290129340398", PhoneNumberID: "106540352242922",
		AppSecret: "0123456789abcdef0123456789abcdef", VerifyToken: "verify-me-please"}
	ev, err := domain.ConnectWhatsApp(shop, &domain.WhatsAppAccount{}, in, msgNow)
	if err != nil || ev.(*domain.WhatsAppAccountConnected).AccessToken != "" {
		t.Fatalf("without a token: %#v %v", ev, err)
	}
	if raw, _ := json.Marshal(ev); strings.Contains(string(raw), "access_token") {
		t.Errorf("no token, yet the payload has the field: %s", raw)
	}
	var acc domain.WhatsAppAccount
	acc.Apply(ev)

	first, second := "EAAGm0PX4ZCpsBAKfirst-token-0001", "EAAGm0PX4ZCpsBAKsecond-token-002"
	in.AccessToken = first
	ev, err = domain.ConnectWhatsApp(shop, &acc, in, msgNow)
	if r, ok := ev.(*domain.WhatsAppAccountCredentialsRotated); err != nil || !ok || r.AccessToken != first {
		t.Fatalf("a token given to a connected account: %#v %v", ev, err)
	}
	acc.Apply(ev)
	in.AccessToken = second // only the token changes
	ev, err = domain.ConnectWhatsApp(shop, &acc, in, msgNow)
	r, ok := ev.(*domain.WhatsAppAccountCredentialsRotated)
	if err != nil || !ok || r.AccessToken != second || r.VerifyTokenHash != domain.HashToken(in.VerifyToken) {
		t.Fatalf("a new token alone: %#v %v", ev, err)
	}
	shown, _ := json.Marshal(domain.Shown(r))
	if strings.Contains(string(shown), second) || !strings.Contains(string(shown), `"access_token":"[set]"`) {
		t.Errorf("shown: %s", shown)
	}

	for _, bad := range []string{"short-token", strings.Repeat("a", 4097), "EAAGm0PX4ZCpsBAK\x00null", "EAAGm0PX4ZCpsBAKé-not-ascii", "EAAGm0PX4ZCps BAK-space"} {
		in.AccessToken = bad
		_, err := domain.ConnectWhatsApp(shop, &acc, in, msgNow)
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.CodeInvalid || de.Field != "access_token" {
			t.Errorf("token %q: %v", bad, err)
		}
	}
	in.AccessToken = strings.Repeat("a", 4096)
	if _, err := domain.ConnectWhatsApp(shop, &acc, in, msgNow); err != nil {
		t.Errorf("a 4096-character token: %v", err)
	}
}
