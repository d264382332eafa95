package messaging_test

import (
	"context"
	"database/sql"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/messaging"
)

type fixture struct {
	*testenv.Core
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	return &fixture{testenv.New(t, func() time.Time { return clock })}
}

// project builds the read model from the whole log in a new store.
func (f *fixture) project(t *testing.T, upTo eventlog.Position) *testenv.ReadSide {
	t.Helper()
	rs := f.ReadSide(t, messaging.Projector(f.Codec))
	rs.WaitFor(t, upTo)
	return rs
}

// record runs the scenario's commands and returns the last position.
func (f *fixture) record(t *testing.T) (growth, pro string, last eventlog.Position) {
	t.Helper()
	ctx := context.Background()
	meta := commands.Meta{Actor: "test", Source: "webhook"}
	shop := func(domainName, plan string) string {
		acc, err := f.Commands.CreateAccount(ctx, commands.CreateAccount{Name: domainName, Plan: plan}, meta)
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.Commands.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: domainName, Plan: plan, WebhookSecret: "0123456789abcdef"}, meta)
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	growth, pro = shop("growth.example.com", "growth"), shop("pro.example.com", "pro_plus")
	at := func(sec int64) time.Time { return time.Unix(1750000000+sec, 0).UTC() }
	steps := []func() (commands.Result, error){
		func() (commands.Result, error) {
			r, err := f.Commands.ConnectWhatsApp(ctx, commands.ConnectWhatsApp{ShopID: growth, BusinessAccountID: "11", PhoneNumberID: "21",
				AppSecret: "secret-one-0123456789", VerifyToken: "verify-one", AccessToken: "EAAG-access-token-one-0123"}, meta)
			return r.Result, err
		},
		func() (commands.Result, error) {
			r, err := f.Commands.ConnectWhatsApp(ctx, commands.ConnectWhatsApp{ShopID: growth, BusinessAccountID: "11", PhoneNumberID: "22",
				AppSecret: "secret-two-0123456789", VerifyToken: "verify-two"}, meta)
			return r.Result, err
		},
		func() (commands.Result, error) {
			r, err := f.Commands.ConnectMessagingProvider(ctx, commands.ConnectMessagingProvider{ShopID: growth, Provider: "twilio"}, meta)
			return r.Result, err
		},
		func() (commands.Result, error) {
			return f.Commands.ReceiveWhatsAppMessage(ctx, commands.ReceiveWhatsAppMessage{ShopID: growth, Message: domain.InboundMessage{
				BusinessAccountID: "11", MessageID: "in-1", From: "15551234", ProfileName: "Ada", Type: "text", Text: "hi", SentAt: at(1)}}, meta)
		},
		func() (commands.Result, error) {
			return f.Commands.ReceiveWhatsAppMessage(ctx, commands.ReceiveWhatsAppMessage{ShopID: pro, Message: domain.InboundMessage{
				BusinessAccountID: "12", MessageID: "in-2", From: "15559999", Type: "text", Text: "hello", SentAt: at(2)}}, meta)
		},
		// Out of order: read before delivered; two failures, the first wins.
		status(f, growth, "out-1", "read", at(30), ""),
		status(f, growth, "out-1", "delivered", at(10), ""),
		status(f, growth, "out-1", "sent", at(5), ""),
		status(f, growth, "out-2", "failed", at(40), "131047"),
		status(f, growth, "out-2", "FAILED_LATER", at(41), ""),
		func() (commands.Result, error) {
			return f.Commands.RecordTemplateStatus(ctx, commands.RecordTemplateStatus{ShopID: growth, Status: domain.TemplateStatus{
				BusinessAccountID: "11", TemplateID: "900", Name: "order_confirmation", Language: "en_US", Event: "APPROVED", At: at(50)}}, meta)
		},
		func() (commands.Result, error) {
			return f.Commands.RecordTemplateStatus(ctx, commands.RecordTemplateStatus{ShopID: growth, Status: domain.TemplateStatus{
				BusinessAccountID: "11", TemplateID: "900", Event: "PAUSED", Reason: "low quality", At: at(60)}}, meta)
		},
		func() (commands.Result, error) {
			return f.Commands.RecordPhoneQuality(ctx, commands.RecordPhoneQuality{ShopID: growth, Quality: domain.PhoneQuality{
				BusinessAccountID: "11", DisplayPhoneNumber: "15550783881", Event: "FLAGGED", CurrentLimit: "TIER_1K", At: at(70)}}, meta)
		},
		func() (commands.Result, error) {
			return f.Commands.RecordPhoneQuality(ctx, commands.RecordPhoneQuality{ShopID: growth, Quality: domain.PhoneQuality{
				BusinessAccountID: "11", DisplayPhoneNumber: "15550783881", Event: "THROUGHPUT_UPGRADE", At: at(80)}}, meta)
		},
		func() (commands.Result, error) {
			return f.Commands.RecordAccountAlert(ctx, commands.RecordAccountAlert{ShopID: growth, Alert: domain.AccountAlert{
				BusinessAccountID: "11", Type: "OBA_APPROVED", Severity: "INFORMATIONAL", At: at(90)}}, meta)
		},
		func() (commands.Result, error) {
			return f.Commands.RecordAccountReview(ctx, commands.RecordAccountReview{ShopID: growth, BusinessAccountID: "11", Decision: "PENDING", At: at(91)}, meta)
		},
		func() (commands.Result, error) {
			return f.Commands.RecordAccountReview(ctx, commands.RecordAccountReview{ShopID: growth, BusinessAccountID: "11", Decision: "APPROVED", At: at(92)}, meta)
		},
	}
	for i, step := range steps {
		res, err := step()
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if res.Position > last {
			last = res.Position
		}
	}
	return growth, pro, last
}

func status(f *fixture, shop, id, st string, at time.Time, code string) func() (commands.Result, error) {
	return func() (commands.Result, error) {
		return f.Commands.RecordMessageStatus(context.Background(), commands.RecordMessageStatus{ShopID: shop, Status: domain.MessageStatus{
			Source: "whatsapp", MessageID: id, Status: st, RecipientID: "15551234", At: at, ErrorCode: code}},
			commands.Meta{Actor: "test", Source: "webhook"})
	}
}

func TestReadModels(t *testing.T) {
	f := newFixture(t)
	growth, pro, last := f.record(t)
	q := messaging.NewQueries(f.project(t, last).DB())
	ctx := context.Background()

	acc, err := q.WhatsAppAccount(ctx, "11")
	if err == nil {
		if !strings.HasPrefix(acc.AppSecret, "sec1:") {
			t.Fatalf("app secret in clear in the read model: %q", acc.AppSecret)
		}
		acc.AppSecret, err = f.Codec.OpenSecret(ctx, acc.ShopID, messaging.SecretLabel, acc.AppSecret)
	}
	if err != nil || acc.ShopID != growth || acc.AppSecret != "secret-two-0123456789" || acc.PhoneNumberID != "22" ||
		acc.VerifyTokenHash != domain.HashToken("verify-two") {
		t.Fatalf("account after rotation: %+v %v", acc, err)
	}
	if phone, sealed, err := q.SendingAccount(ctx, growth); err != nil || phone != "22" || !strings.HasPrefix(sealed, "sec1:") {
		t.Errorf("sending account kept across a rotation without a token: %s %q %v", phone, sealed, err)
	}
	if _, err := q.AccountByVerifyTokenHash(ctx, domain.HashToken("verify-one")); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("rotated verify token still found: %v", err)
	}
	if a, err := q.AccountByVerifyTokenHash(ctx, domain.HashToken("verify-two")); err != nil || a.BusinessAccountID != "11" {
		t.Errorf("verify token: %+v %v", a, err)
	}
	if _, err := q.WhatsAppAccount(ctx, "12"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("unconnected account: %v", err)
	}

	if m, err := q.InboundMessage(ctx, growth, "in-1"); err != nil || m.Queue != domain.QueueHuman || *m.Text != "hi" || *m.ProfileName != "Ada" {
		t.Errorf("growth inbound: %+v %v", m, err)
	}
	if list, err := q.Queue(ctx, pro, domain.QueueAIConcierge, 10); err != nil || len(list) != 1 || list[0].ProfileName != nil {
		t.Errorf("pro_plus queue: %+v %v", list, err)
	}

	out1, err := q.Message(ctx, growth, "out-1")
	if err != nil || !out1.DeliveredAt.Equal(time.Unix(1750000010, 0)) || !out1.OpenedAt.Equal(time.Unix(1750000030, 0)) ||
		out1.LastStatus != "sent" || !out1.FailedAt.IsZero() || out1.CustomerID != domain.CustomerIDFromPhone(growth, "15551234") {
		t.Errorf("out-1: %+v %v", out1, err)
	}
	if out2, err := q.Message(ctx, growth, "out-2"); err != nil || !out2.FailedAt.Equal(time.Unix(1750000040, 0)) ||
		out2.ErrorCode != "131047" || out2.LastStatus != "FAILED_LATER" {
		t.Errorf("out-2: %+v %v", out2, err)
	}
	if tp, err := q.Template(ctx, growth, "900"); err != nil || tp.State != "paused" || tp.Name != "order_confirmation" || tp.Reason != "low quality" {
		t.Errorf("template: %+v %v", tp, err)
	}
	if p, err := q.PhoneNumber(ctx, growth, "15550783881"); err != nil || p.Rating != "RED" || p.LastEvent != "THROUGHPUT_UPGRADE" || p.CurrentLimit != "TIER_1K" {
		t.Errorf("phone number: %+v %v", p, err)
	}
	if a, err := q.Alerts(ctx, growth); err != nil || len(a) != 1 || a[0].Type != "OBA_APPROVED" {
		t.Errorf("alerts: %+v %v", a, err)
	}
	if r, err := q.Reviews(ctx, growth); err != nil || len(r) != 2 || r[1].Decision != "APPROVED" {
		t.Errorf("reviews: %+v %v", r, err)
	}
	if r, err := q.Reviews(ctx, pro); err != nil || len(r) != 0 {
		t.Errorf("other shop's reviews: %+v %v", r, err)
	}
}

// Replaying the log gives the same read model, and applying every event a
// second time changes nothing (at-least-once delivery is exactly-once).
func TestReplayAndRepeatGiveTheSameReadModel(t *testing.T) {
	f := newFixture(t)
	_, _, last := f.record(t)
	first := dumpAll(t, f.project(t, last).DB())
	second := f.project(t, last)
	if again := dumpAll(t, second.DB()); !reflect.DeepEqual(first, again) {
		t.Fatalf("replay differs:\n%v\n%v", first, again)
	}
	ctx := context.Background()
	p := messaging.Projector(f.Codec)
	evs, err := f.Log.ReadAll(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if _, err := second.Store.Apply(ctx, "messaging-again", e.Position, func(tx *sql.Tx) error { return p.Handle(ctx, tx, e) }); err != nil {
			t.Fatal(err)
		}
	}
	if again := dumpAll(t, second.DB()); !reflect.DeepEqual(first, again) {
		t.Fatalf("applying every event twice changed the read model:\n%v\n%v", first, again)
	}
}

// After a customer's key is shredded, a rebuilt queue keeps the message
// without its personal data.
func TestRebuildAfterShredding(t *testing.T) {
	f := newFixture(t)
	growth, _, last := f.record(t)
	if err := f.Keys.Shred(context.Background(), growth, domain.CustomerIDFromPhone(growth, "15551234")); err != nil {
		t.Fatal(err)
	}
	q := messaging.NewQueries(f.project(t, last).DB())
	m, err := q.InboundMessage(context.Background(), growth, "in-1")
	if err != nil || m.Text != nil || m.From != nil || m.ProfileName != nil || !m.Redacted || m.Type != "text" {
		t.Fatalf("shredded message: %+v %v", m, err)
	}
}

var tables = []string{"whatsapp_accounts", "provider_connections", "inbound_messages", "message_log", "message_templates",
	"phone_numbers", "account_alerts", "account_reviews"}

// dumpAll reads every table of the read model; a table the scenario
// leaves empty fails the test.
func dumpAll(t *testing.T, db *sql.DB) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for _, table := range tables {
		out[table] = testenv.Dump(t, db, table, "1, 2")
		if len(out[table]) == 0 {
			t.Errorf("table %s is empty: the scenario does not cover it", table)
		}
	}
	return out
}

// TestSendingAccount: the access token is folded sealed; the query finds
// it for the shop only once one is given; a rotation without a token keeps
// it, one with a token replaces it.
func TestSendingAccount(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	meta := commands.Meta{Actor: "test", Source: "cli"}
	acc, err := f.Commands.CreateAccount(ctx, commands.CreateAccount{Name: "send.example.com", Plan: "growth"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Commands.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: "send.example.com", Plan: "growth", WebhookSecret: "0123456789abcdef"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	const first, second = "EAAGm0PX4ZCpsBAK-first-token-01", "EAAGm0PX4ZCpsBAK-second-token-2"
	rs := f.ReadSide(t, messaging.Projector(f.Codec))
	q := messaging.NewQueries(rs.DB())
	connect := func(phone, token string) {
		t.Helper()
		r, err := f.Commands.ConnectWhatsApp(ctx, commands.ConnectWhatsApp{ShopID: s.ID, BusinessAccountID: "31", PhoneNumberID: phone,
			AppSecret: "secret-one-0123456789", VerifyToken: "verify-one", AccessToken: token}, meta)
		if err != nil {
			t.Fatal(err)
		}
		rs.WaitFor(t, r.Position)
	}
	sending := func(wantPhone, wantToken string) {
		t.Helper()
		phone, sealed, err := q.SendingAccount(ctx, s.ID)
		if err != nil {
			t.Fatalf("sending account: %v", err)
		}
		if !strings.HasPrefix(sealed, "sec1:") || strings.Contains(sealed, wantToken) {
			t.Fatalf("access token not sealed: %q", sealed)
		}
		token, err := f.Codec.OpenSecret(ctx, s.ID, messaging.SecretLabel, sealed)
		if err != nil || phone != wantPhone || token != wantToken {
			t.Fatalf("sending account: %s %q %v, want %s %q", phone, token, err, wantPhone, wantToken)
		}
	}

	connect("41", "")
	if _, _, err := q.SendingAccount(ctx, s.ID); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("an account without a token: %v", err)
	}
	connect("41", first)
	sending("41", first)
	connect("42", "") // a rotation without a token keeps it
	sending("42", first)
	connect("42", second)
	sending("42", second)
	if _, _, err := q.SendingAccount(ctx, "shop_other"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop: %v", err)
	}
}
