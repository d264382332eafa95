package conciergereplies_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/concierge"
	"github.com/cgp-platform/cgp/concierge/openai"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/conciergereplies"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

var meta = commands.Meta{Actor: "test", Source: "system"}

var start = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

type fixture struct {
	t        *testing.T
	core     *testenv.Core
	now      func() time.Time
	answerer concierge.Answerer
	n        int
	// jobs are the answering jobs of the read sides.
	jobs map[*testenv.ReadSide]*conciergereplies.Answers
}

func newFixture(t *testing.T, answerer concierge.Answerer) *fixture {
	var ticks atomic.Int64
	now := func() time.Time { return start.Add(time.Duration(ticks.Add(1)) * time.Millisecond) }
	return &fixture{t: t, core: testenv.New(t, now), now: now, answerer: answerer, jobs: map[*testenv.ReadSide]*conciergereplies.Answers{}}
}

// readSide runs the reactor, with the read models whose tables it reads,
// over a store of its own (a rebuild when called again).
func (f *fixture) readSide() *testenv.ReadSide {
	cmds := f.core.Commands
	cfg := conciergereplies.Config{
		Answerer: f.answerer, AnswererName: "test", Now: f.now,
		Reply: func(ctx context.Context, c domain.ConversationFacts, cause, text string, a domain.ConciergeAnswered) error {
			_, err := cmds.AnswerConversation(ctx, commands.AnswerConversation{Conversation: c, InboundEventID: cause, Text: text, Answered: a}, meta)
			return err
		},
		Escalate: func(ctx context.Context, c domain.ConversationFacts, cause, reason string) error {
			_, err := cmds.EscalateConversation(ctx, commands.EscalateConversation{Conversation: c, InboundEventID: cause, Reason: reason}, meta)
			return err
		},
		Raise: func(ctx context.Context, d domain.AnomalyDraft) error {
			_, _, err := cmds.RaiseAnomaly(ctx, commands.RaiseAnomaly{Draft: d}, meta)
			return err
		},
		Resolve: func(ctx context.Context, shop, key, cause string, pos uint64, reason string) error {
			_, _, err := cmds.ResolveAnomaly(ctx, commands.ResolveAnomaly{ShopID: shop, DedupeKey: key, Cause: cause, Reason: reason,
				CausePosition: pos}, meta)
			return err
		},
	}
	rs := f.core.ReadSide(f.t, []projections.Projector{tenancy.Projector(f.core.Codec, nil), customers.Projector(f.core.Codec, nil),
		commerce.Projector(f.core.Codec), conciergereplies.Projector(f.core.Codec, cfg)}...)
	f.jobs[rs] = conciergereplies.NewAnswers(conciergereplies.Answers{DB: rs.Store.DB(), Write: rs.Store.Maintain, Log: f.core.Log,
		Codec: f.core.Codec, Config: cfg})
	return rs
}

// emit appends ev of shop, under id when given.
func (f *fixture) emit(shop string, ev domain.Event, id uuid.UUID) uuid.UUID {
	f.t.Helper()
	f.n++
	if id == uuid.Nil {
		id = uuid.New()
	}
	data, err := f.core.Codec.Encode(context.Background(), id, shop, ev, start, eventlog.Metadata{Actor: "test", Source: "system"})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.core.Log.Append(context.Background(), fmt.Sprintf("test-%d", f.n%3), eventlog.Any(), data); err != nil {
		f.t.Fatal(err)
	}
	return id
}

func (f *fixture) inbound(shop, from, wamid, text, queue string, sent time.Time) *domain.WhatsAppMessageReceived {
	return &domain.WhatsAppMessageReceived{ShopID: shop, CustomerID: domain.CustomerIDFromPhone(shop, from), BusinessAccountID: "1",
		MessageID: wamid, From: from, Type: "text", Text: &text, SentAt: sent, Queue: queue}
}

// settle waits until rs reached the head, its answering job emptied its
// queue, and the head stopped moving.
func (f *fixture) settle(rs *testenv.ReadSide) eventlog.Position {
	f.t.Helper()
	for {
		head, err := f.core.Log.HeadPosition(context.Background())
		if err != nil {
			f.t.Fatal(err)
		}
		rs.WaitFor(f.t, head)
		n, err := f.jobs[rs].Pass(context.Background())
		if err != nil {
			f.t.Fatal(err)
		}
		if again, _ := f.core.Log.HeadPosition(context.Background()); again == head && n == 0 {
			return head
		}
	}
}

// conversation renders a conversation's stream: Answered(confidence),
// Reply(author: text), Queued(queue reason).
func (f *fixture) conversation(shop, from string) string {
	f.t.Helper()
	id := domain.ConversationID(shop, domain.CustomerIDFromPhone(shop, from))
	evs, err := f.core.Log.ReadStream(context.Background(), domain.ConversationStream(id), 0, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		d, err := f.core.Codec.Decode(context.Background(), &e)
		if err != nil {
			f.t.Fatal(err)
		}
		switch ev := d.Event.(type) {
		case *domain.ConciergeAnswered:
			out = append(out, fmt.Sprintf("Answered(%v %s)", ev.Confidence, ev.Answerer))
		case *domain.ConversationReplyRequested:
			text := ev.Text
			if len(text) > 12 {
				text = text[:12]
			}
			out = append(out, fmt.Sprintf("Reply(%s: %s)", ev.Author, text))
		case *domain.ConversationQueued:
			out = append(out, fmt.Sprintf("Queued(%s %s)", ev.Queue, ev.Reason))
		}
	}
	return strings.Join(out, " ")
}

// anomaly renders the conversation's escalation anomaly stream.
func (f *fixture) anomaly(shop, from string) string {
	f.t.Helper()
	id := domain.ConversationID(shop, domain.CustomerIDFromPhone(shop, from))
	evs, err := f.core.Log.ReadStream(context.Background(), domain.AnomalyStream(shop, conciergereplies.EscalationKey(id)), 0, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		d, err := f.core.Codec.Decode(context.Background(), &e)
		if err != nil {
			f.t.Fatal(err)
		}
		switch ev := d.Event.(type) {
		case *domain.AnomalyRaised:
			if strings.Contains(ev.Title+ev.Summary, "refund") {
				f.t.Errorf("the anomaly carries the customer's text: %+v", ev)
			}
			out = append(out, fmt.Sprintf("Raised(%s %s)", ev.Kind, ev.Severity))
		case *domain.AnomalyResolved:
			out = append(out, fmt.Sprintf("Resolved(%s)", ev.Reason))
		}
	}
	return strings.Join(out, " ")
}

// TestAnswersEscalatesOnce: a greeting in the ai_concierge queue is
// answered, once (a rebuild handles it again); a refund request
// escalates (queue, P3 anomaly) and the conversation's next message is
// left to the humans; a human reply resolves the anomaly; a human-queue
// message (below pro_plus), one outside the 24-hour window and a consent
// reply (STOP) get nothing;
// a rebuild of the reactor appends nothing.
func TestAnswersEscalatesOnce(t *testing.T) {
	f := newFixture(t, concierge.NewEmbedded())
	const shop = "shop_a"
	hello := f.inbound(shop, "15550001", "wamid.1", "Hello there", domain.QueueAIConcierge, start)
	f.emit(shop, hello, uuid.Nil)
	f.emit(shop, f.inbound(shop, "15550002", "wamid.2", "I want a REFUND now", domain.QueueAIConcierge, start), uuid.Nil)
	f.emit(shop, f.inbound(shop, "15550002", "wamid.3", "Hello?", domain.QueueAIConcierge, start), uuid.Nil)
	f.emit(shop, f.inbound(shop, "15550003", "wamid.4", "Hello", domain.QueueHuman, start), uuid.Nil)
	f.emit(shop, f.inbound(shop, "15550005", "wamid.6", "STOP", domain.QueueAIConcierge, start), uuid.Nil)
	f.emit(shop, f.inbound(shop, "15550004", "wamid.5", "Hello", domain.QueueAIConcierge, start.Add(-25*time.Hour)), uuid.Nil)
	live := f.readSide()
	f.settle(live)

	if got := f.conversation(shop, "15550001"); got != "Answered(0.9 test) Reply(ai_concierge: Hello! I'm t)" {
		t.Errorf("greeting: %s", got)
	}
	if got := f.conversation(shop, "15550002"); got != "Queued(human keyword)" {
		t.Errorf("refund: %s", got)
	}
	if got := f.anomaly(shop, "15550002"); got != "Raised(conversation_escalated P3)" {
		t.Errorf("refund anomaly: %s", got)
	}
	for _, from := range []string{"15550003", "15550004", "15550005"} {
		if got := f.conversation(shop, from); got != "" {
			t.Errorf("%s: %s", from, got)
		}
	}

	// A human reply resolves the escalation.
	c := domain.ConversationFacts{ID: domain.ConversationID(shop, domain.CustomerIDFromPhone(shop, "15550002")), ShopID: shop,
		CustomerID: domain.CustomerIDFromPhone(shop, "15550002"), WhatsAppID: "15550002", LastInboundAt: start}
	if _, _, err := f.core.Commands.ReplyToConversation(context.Background(), commands.ReplyToConversation{Conversation: c,
		Text: "On it", Author: "alice"}, meta); err != nil {
		t.Fatal(err)
	}
	head := f.settle(live)
	if got := f.anomaly(shop, "15550002"); got != "Raised(conversation_escalated P3) Resolved(a human answered the conversation)" {
		t.Errorf("after the human reply: %s", got)
	}

	if got := f.settle(f.readSide()); got != head {
		t.Fatalf("a rebuild appended: head %d → %d", head, got)
	}
}

// TestProviderFailureEscalates: a provider that refuses (429) sends the
// conversation to the humans with the failure's code; the merchant's
// keyword escalates without asking; a merchant's threshold above the
// answer's confidence escalates as low_confidence.
func TestProviderFailureEscalates(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`))
	}))
	defer srv.Close()
	cl, err := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, cl)
	const shop = "shop_b"
	f.emit(shop, &domain.ConciergeSettingsChanged{ShopID: shop, Settings: domain.ConciergeSettings{Keywords: []string{"warranty"},
		Threshold: 0.6}}, uuid.Nil)
	f.emit(shop, f.inbound(shop, "15550011", "wamid.11", "Where is my order?", domain.QueueAIConcierge, start), uuid.Nil)
	f.emit(shop, f.inbound(shop, "15550012", "wamid.12", "Is my warranty valid?", domain.QueueAIConcierge, start), uuid.Nil)
	f.settle(f.readSide())
	if got := f.conversation(shop, "15550011"); got != "Queued(human answerer_failed:rate_limited)" {
		t.Errorf("provider failure: %s", got)
	}
	if got := f.conversation(shop, "15550012"); got != "Queued(human merchant_keyword)" {
		t.Errorf("merchant keyword: %s", got)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls to the provider, want 1", n)
	}

	g := newFixture(t, concierge.NewEmbedded())
	g.emit(shop, &domain.ConciergeSettingsChanged{ShopID: shop, Settings: domain.ConciergeSettings{Threshold: 0.95}}, uuid.Nil)
	g.emit(shop, g.inbound(shop, "15550013", "wamid.13", "Hello", domain.QueueAIConcierge, start), uuid.Nil)
	g.settle(g.readSide())
	if got := g.conversation(shop, "15550013"); got != "Queued(human low_confidence)" {
		t.Errorf("merchant threshold: %s", got)
	}
}
