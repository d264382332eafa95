package conversations_test

import (
	"context"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/conversations"
)

func meta() commands.Meta { return commands.Meta{Actor: "test", Source: "cli"} }

type fixture struct {
	t     *testing.T
	cmds  *commands.Handler
	read  *testenv.ReadSide
	q     *conversations.Queries
	clock time.Time
	last  eventlog.Position
}

func (f *fixture) done(res commands.Result, err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
	f.last = max(f.last, res.Position)
	f.read.WaitFor(f.t, f.last)
}

func (f *fixture) receive(shop, from, id, text string) {
	f.t.Helper()
	f.done(f.cmds.ReceiveWhatsAppMessage(context.Background(), commands.ReceiveWhatsAppMessage{ShopID: shop,
		Message: domain.InboundMessage{MessageID: id, From: from, Type: "text", Text: text, SentAt: f.clock}}, meta()))
}

func (f *fixture) conversation(shop, id string) *conversations.Conversation {
	f.t.Helper()
	c, err := f.q.Conversation(context.Background(), shop, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) messages(shop, id string) []conversations.Message {
	f.t.Helper()
	var out []conversations.Message
	var after *conversations.Key
	for {
		page, next, err := f.q.Messages(context.Background(), conversations.MessageQuery{Shop: shop, Conversation: id, After: after, Limit: 2})
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, page...)
		if next == nil {
			return out
		}
		after = next
	}
}

// TestConversationsFold folds inbound messages, replies, assignments,
// closes, queue moves, sending outcomes, a customer's erasure and a
// shop's erasure into the read model.
func TestConversationsFold(t *testing.T) {
	ctx := context.Background()
	f := &fixture{t: t, clock: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	core := testenv.New(t, func() time.Time { return f.clock })
	f.cmds, f.read = core.Commands, core.ReadSide(t, conversations.Projector(core.Codec))
	f.q = conversations.NewQueries(f.read.DB())
	acc, err := f.cmds.CreateAccount(ctx, commands.CreateAccount{Name: "Acme", Plan: "pro"}, meta())
	if err != nil {
		t.Fatal(err)
	}
	var shops []string
	for _, d := range []string{"a.example.com", "b.example.com"} {
		s, err := f.cmds.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: d, Plan: "pro", WebhookSecret: "0123456789abcdef"}, meta())
		if err != nil {
			t.Fatal(err)
		}
		shops = append(shops, s.ID)
	}
	a, b := shops[0], shops[1]
	ann := domain.CustomerIDFromPhone(a, "15550001")
	annConv := domain.ConversationID(a, ann)

	f.receive(a, "15550001", "wamid.1", "Where is my order?")
	f.receive(a, "15550001", "wamid.1", "Where is my order?") // redelivered: recorded once
	f.clock = f.clock.Add(time.Minute)
	f.receive(a, "15550001", "wamid.2", "Hello?")
	f.receive(a, "15550002", "wamid.3", "Do you ship abroad?")
	f.receive(b, "15550001", "wamid.1", "Another shop")

	c := f.conversation(a, annConv)
	if c.Queue != domain.QueueHuman || c.UnreadCount != 2 || c.WhatsAppID != "15550001" || c.CustomerID != ann ||
		!c.LastInboundAt.Equal(f.clock) || c.Assignee != "" {
		t.Fatalf("conversation %+v", c)
	}
	list, next, err := f.q.Conversations(ctx, conversations.ListQuery{Shop: a, Limit: 1})
	if err != nil || len(list) != 1 || next == nil || list[0].ID != annConv {
		t.Fatalf("first page %v %v %v", list, next, err)
	}
	list, next, err = f.q.Conversations(ctx, conversations.ListQuery{Shop: a, Limit: 1, After: next})
	if err != nil || len(list) != 1 || next != nil || list[0].ID == annConv {
		t.Fatalf("second page %v %v %v", list, next, err)
	}
	if list, _, _ := f.q.Conversations(ctx, conversations.ListQuery{Shop: a, Customer: ann, Limit: 10}); len(list) != 1 {
		t.Fatalf("by customer %v", list)
	}
	if _, err := f.q.Conversation(ctx, b, annConv); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("another shop's conversation: %v", err)
	}

	// A reply, its outcome, an assignment, a close and the reopening.
	res, reply, err := f.cmds.ReplyToConversation(ctx, commands.ReplyToConversation{Conversation: c.Facts(), Text: "Tomorrow", Author: "tok_1"}, meta())
	f.done(res, err)
	if c := f.conversation(a, annConv); c.UnreadCount != 0 {
		t.Fatalf("after the reply %+v", c)
	}
	f.done(f.cmds.RecordMessageOutcomes(ctx, commands.RecordMessageOutcomes{ShopID: a, Outcomes: []domain.MessageOutcome{{
		MessageRef: domain.MessageRef{MessageID: reply.MessageID, ShopID: a, CustomerID: ann, Channel: domain.ChannelWhatsApp,
			Intent: domain.IntentTransactional}, Outcome: domain.OutcomeSent, ProviderMessageID: "wamid.out", At: f.clock}}}, meta()))
	msgs := f.messages(a, annConv)
	if len(msgs) != 3 || msgs[2].ID != reply.MessageID || msgs[2].Direction != conversations.DirectionOutbound || msgs[2].Status != "sent" ||
		msgs[2].Text != "Tomorrow" || msgs[0].Text != "Where is my order?" || msgs[0].Status != "" {
		t.Fatalf("messages %+v", msgs)
	}
	f.done(f.cmds.AssignConversation(ctx, commands.AssignConversation{Conversation: c.Facts(), Assignee: "alice"}, meta()))
	f.done(f.cmds.CloseConversation(ctx, commands.CloseConversation{Conversation: c.Facts()}, meta()))
	if c := f.conversation(a, annConv); c.Queue != domain.QueueClosed || c.Assignee != "alice" {
		t.Fatalf("closed %+v", c)
	}
	f.receive(a, "15550001", "wamid.4", "Thanks")
	if c := f.conversation(a, annConv); c.Queue != domain.QueueHuman || c.UnreadCount != 1 {
		t.Fatalf("reopened %+v", c)
	}
	f.done(f.cmds.QueueConversation(ctx, commands.QueueConversation{Conversation: c.Facts(), Queue: domain.QueueAIConcierge, Reason: "test"}, meta()))
	if c := f.conversation(a, annConv); c.Queue != domain.QueueAIConcierge {
		t.Fatalf("queued %+v", c)
	}

	// The customer's erasure nulls its identity and texts, in this shop only.
	f.done(f.cmds.RecordCustomerErased(ctx, commands.RecordCustomerErased{Erased: domain.CustomerErased{ShopID: a,
		CustomerID: domain.CustomerIDFromExternal(a, "77"), MessagingCustomerID: ann, RequestEventID: "req-1"}}, meta()))
	if n, err := f.q.TextsLeft(ctx, a, ann); err != nil || n != 0 {
		t.Fatalf("texts left %d %v", n, err)
	}
	for _, m := range f.messages(a, annConv) {
		if m.Text != "" || !m.Redacted {
			t.Fatalf("an erased message %+v", m)
		}
	}
	if c := f.conversation(a, annConv); c.WhatsAppID != "" {
		t.Fatalf("erased conversation %+v", c)
	}
	if n, _ := f.q.TextsLeft(ctx, b, domain.CustomerIDFromPhone(b, "15550001")); n != 2 {
		t.Fatalf("the other shop's conversation lost its data: %d left", n)
	}

	// The shop's erasure deletes its rows.
	f.done(f.cmds.EraseShop(ctx, commands.EraseShop{ShopID: a, Reason: domain.ShopErasedRedact}, meta()))
	for _, table := range []string{"conversations", "conversation_messages"} {
		var n int
		if err := f.read.DB().QueryRow(`SELECT count(*) FROM `+table+` WHERE shop_id = ?`, a).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s: %d rows of the erased shop (%v)", table, n, err)
		}
	}
	if _, err := f.q.Conversation(ctx, b, domain.ConversationID(b, domain.CustomerIDFromPhone(b, "15550001"))); err != nil {
		t.Fatalf("the other shop's conversation: %v", err)
	}
}
