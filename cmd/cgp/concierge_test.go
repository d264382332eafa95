package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/internal/whatsapptest"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/projections/conciergereplies"
)

// waitConcierge waits until the concierge reactor has handled pos.
func waitConcierge(t *testing.T, rm *sql.DB, pos string) {
	t.Helper()
	want, _ := strconv.ParseUint(pos, 10, 64)
	eventually(t, time.Minute, "concierge reactor at "+pos, func() bool {
		var at uint64
		err := rm.QueryRow(`SELECT position FROM _projector_checkpoints WHERE projector = ?`, conciergereplies.Name).Scan(&at)
		return err == nil && at >= want
	})
}

// conciergeCustomer records, through the commerce webhooks, a customer
// whose phone is +digits with a paid order #1043 placed an hour ago, and
// waits for the read models to hold them (a customer writes long after
// ordering; the reactor reads them as they are).
func conciergeCustomer(t *testing.T, s *testServer, rm *sql.DB, tn tenant, digits string, external int64) {
	t.Helper()
	customer := editJSON(t, fixture(t, "customers/create"), func(m map[string]any) {
		m["id"], m["phone"] = external, "+"+digits
	})
	if r := s.webhook(t, tn, "customers/create", fmt.Sprintf("cc-c-%d", external), customer); r.status != http.StatusOK {
		t.Fatalf("customers/create: %d %s", r.status, r.body)
	}
	placed := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	order := editJSON(t, fixture(t, "orders/create"), func(m map[string]any) {
		m["financial_status"], m["created_at"], m["updated_at"], m["processed_at"] = "paid", placed, placed, placed
		m["customer"].(map[string]any)["id"] = external
		m["customer"].(map[string]any)["phone"] = "+" + digits
	})
	if r := s.webhook(t, tn, "orders/create", fmt.Sprintf("cc-o-%d", external), order); r.status != http.StatusOK {
		t.Fatalf("orders/create: %d %s", r.status, r.body)
	}
	eventually(t, 30*time.Second, "the customer and its order in the read models", func() bool {
		var n int
		err := rm.QueryRow(`SELECT COUNT(*) FROM customers c JOIN orders o ON o.shop_id = c.shop_id AND o.customer_id = c.customer_id
			WHERE c.shop_id = ? AND c.phone = ? AND o.financial_status = 'paid'`, tn.shopID, "+"+digits).Scan(&n)
		return err == nil && n == 1
	})
}

// TestConciergeAnswersAndEscalates: on a pro_plus shop, the embedded
// concierge answers "where is my order" from the customer's latest order
// (the text sent through the Cloud API's contract names the order and its
// status), once however often the message is redelivered; the answer is in
// the conversation, the message log and the audit history
// (ConciergeAnswered with its confidence and sources). "I want a refund"
// goes to the human queue with an in-app conversation_escalated
// notification and nothing sent, and a human reply resolves it. On a pro
// shop every message goes to the human queue, unanswered.
func TestConciergeAnswersAndEscalates(t *testing.T) {
	api := whatsapptest.New(whatsapptest.Options{})
	defer api.Close()
	dir := t.TempDir()
	s, _ := sendingServer(t, dir, func(c *Config) { c.WhatsAppAPIURL = api.URL })
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := connectWhatsApp(t, s, rm, "concierge-pp.example.com", "pro_plus", "7101")
	pro := connectWhatsApp(t, s, rm, "concierge-pro.example.com", "pro", "7102")

	const buyer, unhappy, proBuyer = "15550108001", "15550108002", "15550108003"
	conciergeCustomer(t, s, rm, wt.tenant, buyer, 81001)
	conciergeCustomer(t, s, rm, pro.tenant, proBuyer, 81003)

	where := inboundText(t, wt.waba, buyer, "wamid.cc-1", "Hi, where is my order?", time.Now().Add(-time.Minute))
	pos := receive(t, s, v, wt, where)
	waitConcierge(t, rm, pos)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := api.WaitCount(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// A redelivery of the same message answers nothing more.
	waitConcierge(t, rm, receive(t, s, v, wt, where))
	pos = receive(t, s, v, wt, inboundText(t, wt.waba, unhappy, "wamid.cc-2", "I want a refund, this is broken", time.Now()))
	waitConcierge(t, rm, pos)
	pos = receive(t, s, v, pro, inboundText(t, pro.waba, proBuyer, "wamid.cc-3", "Where is my order?", time.Now()))
	waitConcierge(t, rm, pos)

	sent := api.Sent()
	if len(sent) != 1 || sent[0].Type != "text" || sent[0].To != buyer || sent[0].Token != "EAAG-test-token-7101" {
		t.Fatalf("sent %+v", sent)
	}
	if text := sent[0].Text; !strings.Contains(text, "Hi Noor!") || !strings.Contains(text, "#1043") || !strings.Contains(text, "paid") ||
		!strings.Contains(text, "not shipped yet") {
		t.Fatalf("the answer does not tell the order's status: %q", text)
	}

	// The pro shop's conversation is in the human queue, unanswered.
	proConv := domain.ConversationID(pro.shopID, domain.CustomerIDFromPhone(pro.shopID, proBuyer))
	eventually(t, 30*time.Second, "the pro shop's conversation", func() bool {
		var queue string
		err := rm.QueryRow(`SELECT queue FROM conversations WHERE conversation_id = ?`, proConv).Scan(&queue)
		return err == nil && queue == domain.QueueHuman
	})

	// The admin API is the agency plan's: the shops move there once their
	// customers wrote.
	for _, tn := range []waTenant{wt, pro} {
		up := cli(t, dir, "shops", "set-plan", "--shop", tn.shopID, "--plan", "agency")
		p := fmt.Sprint(uint64(up["position"].(float64)))
		eventually(t, 20*time.Second, "the agency plan in force", func() bool {
			return s.get(t, "/api/v1/conversations", tn.token, "X-Wait-For-Position", p).status == http.StatusOK
		})
	}
	c := catalogClient{t: t, s: s, v: v, token: wt.token}
	head := fmt.Sprint(uint64(readLog(t, dir)[len(readLog(t, dir))-1].Position))

	buyerID := domain.CustomerIDFromPhone(wt.shopID, buyer)
	answered := domain.ConversationID(wt.shopID, buyerID)
	var thread []map[string]any
	eventually(t, 30*time.Second, "the answer sent, in the conversation", func() bool {
		thread = c.list("/api/v1/conversations/"+answered+"/messages", head)
		return len(thread) == 2 && attrs(thread[1])["status"] == "sent"
	})
	if a := attrs(thread[1]); a["author"] != "ai_concierge" || a["direction"] != "outbound" || a["text"] != sent[0].Text ||
		thread[1]["id"] != sent[0].CallbackData {
		t.Fatalf("thread %v", thread)
	}
	if q := attrs(data(c.ok(200, http.MethodGet, "/api/v1/conversations/"+answered, ""), t))["queue"]; q != "ai_concierge" {
		t.Fatalf("the answered conversation is in %v", q)
	}
	if log := c.list("/api/v1/messages?filter[customer_id]="+buyerID, head); len(log) != 1 || log[0]["id"] != thread[1]["id"] {
		t.Fatalf("message log %v", log)
	}
	audit := shopAnomalies(t, s, v, wt.tenant, "ConciergeAnswered")
	if len(audit) != 1 || audit[0]["inbound_message_id"] != "wamid.cc-1" || audit[0]["reply_message_id"] != thread[1]["id"] ||
		audit[0]["answerer"] != "embedded" || audit[0]["confidence"] != 0.9 || fmt.Sprint(audit[0]["sources"]) != "[order:#1043]" {
		t.Fatalf("ConciergeAnswered %v", audit)
	}

	// The refund request is in the human queue, with a P3 in-app
	// notification naming the conversation and no customer text.
	refund := domain.ConversationID(wt.shopID, domain.CustomerIDFromPhone(wt.shopID, unhappy))
	humans := c.list("/api/v1/conversations?filter[queue]=human", head)
	if len(humans) != 1 || humans[0]["id"] != refund {
		t.Fatalf("human queue %v", humans)
	}
	var escalated map[string]any
	for _, n := range c.list("/api/v1/notifications?limit=100", head) {
		if attrs(n)["kind"] == domain.AnomalyConversationEscalate {
			if escalated != nil {
				t.Fatalf("two escalation notifications")
			}
			escalated = n
		}
	}
	if escalated == nil {
		t.Fatal("no conversation_escalated notification")
	}
	na := attrs(escalated)
	if na["severity"] != "P3" || !strings.Contains(fmt.Sprint(na["title"]), "reason: keyword") ||
		strings.Contains(fmt.Sprint(na), "refund") || !strings.Contains(fmt.Sprint(na["resources"]), refund) {
		t.Fatalf("notification %v", escalated)
	}
	queued := shopAnomalies(t, s, v, wt.tenant, "ConversationQueued")
	if len(queued) != 1 || queued[0]["queue"] != "human" || queued[0]["reason"] != "keyword" {
		t.Fatalf("ConversationQueued %v", queued)
	}

	// A human reply resolves the notification.
	c.ok(202, http.MethodPost, "/api/v1/conversations/"+refund+"/messages", `{"data":{"attributes":{"text":"Sorry, we'll sort it out"}}}`)
	eventually(t, 30*time.Second, "the escalation resolved", func() bool {
		n := data(c.ok(200, http.MethodGet, "/api/v1/notifications/"+escalated["id"].(string), ""), t)
		return attrs(n)["resolved_at"] != nil
	})
	if err := api.WaitCount(ctx, 2); err != nil {
		t.Fatal(err)
	}

	// The pro shop: human queue, nothing answered, no ConciergeAnswered.
	pc := catalogClient{t: t, s: s, v: v, token: pro.token}
	if got := pc.list("/api/v1/conversations?filter[queue]=human", head); len(got) != 1 || got[0]["id"] != proConv {
		t.Fatalf("the pro shop's human queue %v", got)
	}
	if a := shopAnomalies(t, s, v, pro.tenant, "ConciergeAnswered"); len(a) != 0 {
		t.Fatalf("the pro shop was answered: %v", a)
	}
	if n := api.Count(); n != 2 {
		t.Fatalf("%d messages sent in all, want the answer and the human reply", n)
	}
	for _, secret := range []string{"where is my order", "I want a refund", "not shipped yet"} {
		if strings.Contains(strings.ToLower(s.logs.String()), strings.ToLower(secret)) {
			t.Errorf("%q is in the logs", secret)
		}
	}
}

// chatCompletions serves the OpenAI chat-completions contract: it records
// each request's Authorization header and body and answers answer.
type chatCompletions struct {
	mu        sync.Mutex
	auth      []string
	bodies    []string
	answer    string
	sources   []string
	srv       *httptest.Server
	confident float64
}

func newChatCompletions(t *testing.T, answer string, confidence float64, sources ...string) *chatCompletions {
	c := &chatCompletions{answer: answer, confident: confidence, sources: sources}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.auth = append(c.auth, r.Header.Get("Authorization"))
		c.bodies = append(c.bodies, string(body))
		c.mu.Unlock()
		content, _ := json.Marshal(map[string]any{"answer": c.answer, "confidence": c.confident, "sources": c.sources})
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion", "created": time.Now().Unix(), "model": "gpt-4o-mini-2024-07-18",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": string(content), "refusal": nil}}},
			"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
		})
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *chatCompletions) requests() ([]string, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.auth...), append([]string(nil), c.bodies...)
}

// TestConciergeSettingsAndProvider: the concierge settings are a member of
// GET/PATCH /api/v1/shop (partial edits, 422 naming the field, the
// notifications member kept); with --concierge-api-url the answer comes
// from the OpenAI-compatible API, which is given the shop's policy and the
// customer's first name and orders but no e-mail, phone or last name, and
// the merchant's own keyword sends a message to a human without asking
// the provider.
func TestConciergeSettingsAndProvider(t *testing.T) {
	api := whatsapptest.New(whatsapptest.Options{})
	defer api.Close()
	const key = "sk-test-concierge-key-0123456789"
	answer := "Hi Noor! You can return any item within 30 days: just reply with your order number."
	llm := newChatCompletions(t, answer, 0.85, "policy:returns")
	dir := t.TempDir()
	s, _ := sendingServer(t, dir, func(c *Config) {
		c.WhatsAppAPIURL = api.URL
		c.ConciergeAPIURL, c.ConciergeAPIKey, c.ConciergeModel = llm.srv.URL+"/v1", key, "gpt-4o-mini"
	})
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := connectWhatsApp(t, s, rm, "concierge-llm.example.com", "agency", "7103")
	waitForToken(t, s, wt.tenant)
	c := catalogClient{t: t, s: s, v: v, token: wt.token}

	// Defaults, then bad edits: 422 naming the field, nothing changed.
	shop := attrs(data(c.ok(200, http.MethodGet, "/api/v1/shop", ""), t))
	if got := fmt.Sprint(shop["concierge"]); got != "map[keywords:[] policies:map[contact:<nil> returns:<nil> shipping:<nil>] threshold:0.6]" {
		t.Fatalf("default concierge settings %s", got)
	}
	patch := func(concierge string) string { return `{"data":{"attributes":{"concierge":` + concierge + `}}}` }
	for field, body := range map[string]string{
		"concierge.policies.returns":  patch(`{"policies":{"returns":"` + strings.Repeat("é", domain.MaxConciergePolicy+1) + `"}}`),
		"concierge.policies.warranty": patch(`{"policies":{"warranty":"two years"}}`),
		"concierge.threshold":         patch(`{"threshold":1.5}`),
		"concierge.keywords":          patch(`{"keywords":["` + strings.Repeat("k", domain.MaxConciergeKeyword+1) + `"]}`),
		"concierge":                   patch(`{}`),
	} {
		c.fails(422, "validation_failed", field, http.MethodPatch, "/api/v1/shop", body)
	}
	many := make([]string, domain.MaxConciergeKeywords+1)
	for i := range many {
		many[i] = fmt.Sprintf("kw%d", i)
	}
	manyJSON, _ := json.Marshal(many)
	c.fails(422, "validation_failed", "concierge.keywords", http.MethodPatch, "/api/v1/shop", patch(`{"keywords":`+string(manyJSON)+`}`))

	// A partial edit: the policy and keyword set, the threshold and the
	// notifications kept; a second edit changes the threshold alone.
	policy := "Returns are free within 30 days of delivery."
	r := c.ok(200, http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"notifications":{"emails":["ops@concierge-llm.example.com"]},
		"concierge":{"policies":{"returns":"`+policy+`"},"keywords":["Warranty"]}}}}`, "Idempotency-Key", "cc-settings-1")
	got := attrs(data(r, t))
	if cs := got["concierge"].(map[string]any); cs["policies"].(map[string]any)["returns"] != policy ||
		fmt.Sprint(cs["keywords"]) != "[warranty]" || cs["threshold"] != 0.6 {
		t.Fatalf("after the edit %v", got)
	}
	r = c.ok(200, http.MethodPatch, "/api/v1/shop", patch(`{"threshold":0.7}`))
	got = attrs(data(c.ok(200, http.MethodGet, "/api/v1/shop", "", "X-Wait-For-Position", r.position(t)), t))
	if cs := got["concierge"].(map[string]any); cs["policies"].(map[string]any)["returns"] != policy || cs["threshold"] != 0.7 ||
		fmt.Sprint(cs["keywords"]) != "[warranty]" || fmt.Sprint(got["notifications"].(map[string]any)["emails"]) != "[ops@concierge-llm.example.com]" {
		t.Fatalf("after the second edit %v", got)
	}

	const digits = "15550108004"
	conciergeCustomer(t, s, rm, wt.tenant, digits, 81004)
	pos := receive(t, s, v, wt, inboundText(t, wt.waba, digits, "wamid.cc-4", "Can I send it back?", time.Now()))
	waitConcierge(t, rm, pos)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := api.WaitCount(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if sent := api.Sent(); len(sent) != 1 || sent[0].Text != answer || sent[0].To != digits {
		t.Fatalf("sent %+v", sent)
	}
	auths, bodies := llm.requests()
	if len(bodies) != 1 || auths[0] != "Bearer "+key {
		t.Fatalf("%d requests to the provider, authorization %v", len(bodies), auths)
	}
	for _, want := range []string{policy, "Noor", "#1043", "gpt-4o-mini", "Can I send it back?"} {
		if !strings.Contains(bodies[0], want) {
			t.Errorf("the provider was not given %q: %s", want, bodies[0])
		}
	}
	for _, never := range []string{"noor.haddad@example.com", digits, "Haddad", wt.shopID} {
		if strings.Contains(bodies[0], never) {
			t.Errorf("the provider was given %q", never)
		}
	}

	// The merchant's keyword escalates without asking the provider.
	pos = receive(t, s, v, wt, inboundText(t, wt.waba, digits, "wamid.cc-5", "Is the WARRANTY still valid?", time.Now()))
	waitConcierge(t, rm, pos)
	head := fmt.Sprint(uint64(readLog(t, dir)[len(readLog(t, dir))-1].Position))
	conv := domain.ConversationID(wt.shopID, domain.CustomerIDFromPhone(wt.shopID, digits))
	if q := attrs(data(c.ok(200, http.MethodGet, "/api/v1/conversations/"+conv, "", "X-Wait-For-Position", head), t))["queue"]; q != "human" {
		t.Fatalf("after the merchant's keyword the conversation is in %v", q)
	}
	if _, bodies := llm.requests(); len(bodies) != 1 {
		t.Fatalf("%d requests to the provider", len(bodies))
	}
	audit := shopAnomalies(t, s, v, wt.tenant, "ConciergeAnswered")
	if len(audit) != 1 || audit[0]["answerer"] != "openai" || audit[0]["confidence"] != 0.85 || fmt.Sprint(audit[0]["sources"]) != "[policy:returns]" {
		t.Fatalf("ConciergeAnswered %v", audit)
	}
	if queued := shopAnomalies(t, s, v, wt.tenant, "ConversationQueued"); len(queued) != 1 || queued[0]["reason"] != "merchant_keyword" {
		t.Fatalf("ConversationQueued %v", queued)
	}
	if api.Count() != 1 {
		t.Fatalf("%d messages sent", api.Count())
	}
	for _, secret := range []string{key, "Can I send it back?", answer} {
		if strings.Contains(s.logs.String(), secret) {
			t.Errorf("%q is in the logs", secret)
		}
	}
}
