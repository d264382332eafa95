package commands_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/internal/testenv"
)

func TestConnectWhatsAppClaimsTheAccount(t *testing.T) {
	h, l := newHandler(t)
	ctx := context.Background()
	a := newShop(t, h, "wa-a.example.com", "growth")
	b := newShop(t, h, "wa-b.example.com", "growth")
	cmd := commands.ConnectWhatsApp{ShopID: a, BusinessAccountID: "102290129340398", PhoneNumberID: "106540352242922",
		AppSecret: "app-secret-0123456789abcdef", VerifyToken: "verify-token-1"}
	first, err := h.ConnectWhatsApp(ctx, cmd, meta)
	if err != nil || first.Rotated || first.ID != cmd.BusinessAccountID {
		t.Fatalf("connect: %+v %v", first, err)
	}
	cmd.AppSecret, cmd.VerifyToken = "app-secret-rotated-0123456789", "verify-token-2"
	again, err := h.ConnectWhatsApp(ctx, cmd, meta)
	if err != nil || !again.Rotated || again.Position <= first.Position {
		t.Fatalf("reconnect: %+v %v", again, err)
	}
	cmd.ShopID = b
	if _, err := h.ConnectWhatsApp(ctx, cmd, meta); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("another shop: %v", err)
	}
	cmd.ShopID = "shop_missing"
	if _, err := h.ConnectWhatsApp(ctx, cmd, meta); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("missing shop: %v", err)
	}
	evs, _ := l.ReadStream(ctx, domain.WhatsAppAccountStream(cmd.BusinessAccountID), 0, 10)
	if len(evs) != 2 || evs[0].Type != "WhatsAppAccountConnected" || evs[1].Type != "WhatsAppAccountCredentialsRotated" {
		t.Fatalf("stream: %d events", len(evs))
	}
	for _, e := range evs {
		for _, secret := range []string{"app-secret-0123456789abcdef", "app-secret-rotated", "verify-token-1", "verify-token-2"} {
			if bytes.Contains(e.Data, []byte(secret)) {
				t.Errorf("%s holds %q in clear", e.Type, secret)
			}
		}
	}

	// Two shops racing for a new account: one wins, the other conflicts.
	c := newShop(t, h, "wa-c.example.com", "growth")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, shop := range []string{b, c} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = h.ConnectWhatsApp(ctx, commands.ConnectWhatsApp{ShopID: shop, BusinessAccountID: "999", PhoneNumberID: "1",
				AppSecret: "app-secret-0123456789abcdef", VerifyToken: "verify-token"}, meta)
		}()
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || (domain.ErrorCode(errs[0]) != domain.CodeConflict && domain.ErrorCode(errs[1]) != domain.CodeConflict) {
		t.Fatalf("race: %v / %v", errs[0], errs[1])
	}
	if n := streamLen(t, l, domain.WhatsAppAccountStream("999")); n != 1 {
		t.Fatalf("race left %d events", n)
	}
}

func TestConnectMessagingProvider(t *testing.T) {
	h, l := newHandler(t)
	ctx := context.Background()
	shop := newShop(t, h, "prov.example.com", "growth")
	first, err := h.ConnectMessagingProvider(ctx, commands.ConnectMessagingProvider{ShopID: shop, Provider: "twilio"}, meta)
	if err != nil || !domain.ValidProviderToken(first.Token) || first.Rotated {
		t.Fatalf("connect: %+v %v", first, err)
	}
	second, err := h.ConnectMessagingProvider(ctx, commands.ConnectMessagingProvider{ShopID: shop, Provider: "twilio"}, meta)
	if err != nil || !second.Rotated || second.Token == first.Token {
		t.Fatalf("rotate: %+v %v", second, err)
	}
	if _, err := h.ConnectMessagingProvider(ctx, commands.ConnectMessagingProvider{ShopID: shop, Provider: "Bad Name"}, meta); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("bad provider: %v", err)
	}
	evs, _ := l.ReadStream(ctx, domain.MessagingProviderStream(shop, "twilio"), 0, 10)
	if len(evs) != 2 || bytes.Contains(evs[0].Data, []byte(first.Token)) || bytes.Contains(evs[1].Data, []byte(second.Token)) {
		t.Fatalf("provider stream: %d events (raw token must never be stored)", len(evs))
	}
}

func TestReceiveWhatsAppMessageQueuesByCurrentPlanOnce(t *testing.T) {
	core := testenv.New(t, nil)
	h, l, codec := core.Commands, core.Log, core.Codec
	ctx := context.Background()
	shop := newShop(t, h, "queue.example.com", "growth")
	msg := domain.InboundMessage{BusinessAccountID: "1", MessageID: "wamid.A", From: "16505551234", Type: "text", Text: "where is my order"}
	res, err := h.ReceiveWhatsAppMessage(ctx, commands.ReceiveWhatsAppMessage{ShopID: shop, Message: msg}, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		again, err := h.ReceiveWhatsAppMessage(ctx, commands.ReceiveWhatsAppMessage{ShopID: shop, Message: msg}, meta)
		if err != nil || again.Position != res.Position {
			t.Fatalf("repeat %d: %+v %v", i, again, err)
		}
	}
	if _, err := h.ChangeShopPlan(ctx, commands.ChangeShopPlan{ShopID: shop, Plan: "pro_plus"}, meta); err != nil {
		t.Fatal(err)
	}
	msg.MessageID = "wamid.B"
	if _, err := h.ReceiveWhatsAppMessage(ctx, commands.ReceiveWhatsAppMessage{ShopID: shop, Message: msg}, meta); err != nil {
		t.Fatal(err)
	}
	queues := map[string]string{}
	for _, id := range []string{"wamid.A", "wamid.B"} {
		evs, _ := l.ReadStream(ctx, domain.MessageStream(shop, id), 0, 10)
		if len(evs) != 1 {
			t.Fatalf("%s: %d events", id, len(evs))
		}
		if bytes.Contains(evs[0].Data, []byte("16505551234")) || bytes.Contains(evs[0].Data, []byte("where is my order")) {
			t.Errorf("%s: personal data in clear", id)
		}
		d, err := codec.Decode(ctx, &evs[0])
		if err != nil {
			t.Fatal(err)
		}
		ev := d.Event.(*domain.WhatsAppMessageReceived)
		queues[id] = ev.Queue
		if ev.From != "16505551234" || ev.CustomerID != domain.CustomerIDFromPhone(shop, "16505551234") {
			t.Errorf("%s: %+v", id, ev)
		}
	}
	if queues["wamid.A"] != domain.QueueHuman || queues["wamid.B"] != domain.QueueAIConcierge {
		t.Fatalf("queues %v", queues)
	}
}

func TestRecordedFactsAppendOnce(t *testing.T) {
	h, l := newHandler(t)
	ctx := context.Background()
	shop := newShop(t, h, "facts.example.com", "growth")
	status := commands.RecordMessageStatus{ShopID: shop, Status: domain.MessageStatus{Source: "whatsapp", MessageID: "wamid.X", Status: "delivered", RecipientID: "1555"}}
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.RecordMessageStatus(ctx, status, meta); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// The same status from a provider is the same fact.
	status.Status.Source = "provider:twilio"
	if _, err := h.RecordMessageStatus(ctx, status, meta); err != nil {
		t.Fatal(err)
	}
	status.Status.Status = "read"
	if _, err := h.RecordMessageStatus(ctx, status, meta); err != nil {
		t.Fatal(err)
	}
	if n := streamLen(t, l, domain.MessageStream(shop, "wamid.X")); n != 2 {
		t.Fatalf("message stream has %d events, want delivered and read", n)
	}
	ts := commands.RecordTemplateStatus{ShopID: shop, Status: domain.TemplateStatus{BusinessAccountID: "1", TemplateID: "77", Event: "PAUSED"}}
	for i := 0; i < 2; i++ {
		if _, err := h.RecordTemplateStatus(ctx, ts, meta); err != nil {
			t.Fatal(err)
		}
	}
	review := commands.RecordAccountReview{ShopID: shop, BusinessAccountID: "1", Decision: "APPROVED"}
	alert := commands.RecordAccountAlert{ShopID: shop, Alert: domain.AccountAlert{BusinessAccountID: "1", Type: "OBA_APPROVED"}}
	for i := 0; i < 2; i++ {
		if _, err := h.RecordAccountReview(ctx, review, meta); err != nil {
			t.Fatal(err)
		}
		if _, err := h.RecordAccountAlert(ctx, alert, meta); err != nil {
			t.Fatal(err)
		}
	}
	if n := streamLen(t, l, domain.WhatsAppTemplateStream(shop, "77")); n != 1 {
		t.Errorf("template stream: %d events", n)
	}
	if n := streamLen(t, l, domain.WhatsAppAccountStream("1")); n != 2 {
		t.Errorf("account stream: %d events, want one review and one alert", n)
	}
	if _, err := h.RecordMessageStatus(ctx, commands.RecordMessageStatus{ShopID: shop}, meta); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("empty status: %v", err)
	}
}
