package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/internal/whatsapptest"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// inboundText is a WhatsApp notification of a text message from the
// number digits, sent at at.
func inboundText(t *testing.T, waba, digits, wamid, text string, at time.Time) []byte {
	t.Helper()
	b := waFixture(t, "messages_text", waba)
	b = bytes.ReplaceAll(b, []byte("16505551234"), []byte(digits))
	b = bytes.ReplaceAll(b, []byte("Does it come in another color?"), []byte(text))
	b = bytes.ReplaceAll(b, []byte(`"1749416383"`), []byte(strconv.Quote(strconv.FormatInt(at.Unix(), 10))))
	return bytes.ReplaceAll(b, []byte("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA="), []byte(wamid))
}

// receive posts an inbound message and returns its position.
func receive(t *testing.T, s *testServer, v *openapitest.Validator, wt waTenant, body []byte) string {
	t.Helper()
	r := waPost(t, s, v, wt.appSecret, body)
	if r.status != http.StatusOK {
		t.Fatalf("inbound message: %d %s", r.status, r.body)
	}
	return r.position(t)
}

// TestConversationsInbox drives the inbox over HTTP: inbound messages
// open conversations in the plan's queue; a human reply goes once through
// the Cloud API's contract as a text message, shows in the conversation
// and the message log, and its status lands on it; a reply outside the
// customer-service window is refused and nothing is sent; assign, close
// and reopen; scopes and other shops; erasing the customer erases the
// texts from the read models, the sending store and every file.
func TestConversationsInbox(t *testing.T) {
	api := whatsapptest.New(whatsapptest.Options{})
	defer api.Close()
	dir := t.TempDir()
	s, _ := sendingServer(t, dir, func(c *Config) { c.WhatsAppAPIURL = api.URL })
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	wt := connectWhatsApp(t, s, rm, "conversations.example.com", "pro", "7001")
	// Below pro_plus inbound messages go to the human queue.
	concierge := connectWhatsApp(t, s, rm, "concierge.example.com", "agency", "7002")
	waitForToken(t, s, wt.tenant)
	waitForToken(t, s, concierge.tenant)
	c := catalogClient{t: t, s: s, v: v, token: wt.token}
	other := catalogClient{t: t, s: s, v: v, token: concierge.token}

	const digits, late = "15550107001", "15550107002"
	customer := domain.CustomerIDFromPhone(wt.shopID, digits)
	question := "Where is my parcel? conv-secret-question"
	receive(t, s, v, wt, inboundText(t, wt.waba, digits, "wamid.conv-1", question, time.Now().Add(-time.Minute)))
	receive(t, s, v, wt, inboundText(t, wt.waba, late, "wamid.conv-old", "an old question", time.Now().Add(-25*time.Hour)))
	receive(t, s, v, concierge, inboundText(t, concierge.waba, digits, "wamid.conv-2", "Hello", time.Now()))
	// The admin API is the agency plan's: the shop moves there once its
	// customers wrote on pro.
	up := cli(t, dir, "shops", "set-plan", "--shop", wt.shopID, "--plan", "agency")
	pos := fmt.Sprint(uint64(up["position"].(float64)))
	eventually(t, 20*time.Second, "the agency plan in force", func() bool {
		return s.get(t, "/api/v1/conversations", wt.token, "X-Wait-For-Position", pos).status == http.StatusOK
	})

	// Below pro_plus every conversation is in the human queue; from
	// pro_plus up in the AI concierge's.
	all := c.list("/api/v1/conversations?limit=1", pos)
	if len(all) != 2 {
		t.Fatalf("conversations %v", all)
	}
	humans := c.list("/api/v1/conversations?filter[queue]=human", pos)
	if len(humans) != 2 || len(c.list("/api/v1/conversations?filter[queue]=ai_concierge", pos)) != 0 {
		t.Fatalf("human queue %v", humans)
	}
	mine := c.list("/api/v1/conversations?filter[customer_id]="+customer, pos)
	if len(mine) != 1 || attrs(mine[0])["unread_count"] != 1.0 || attrs(mine[0])["assignee"] != nil {
		t.Fatalf("by customer %v", mine)
	}
	id := mine[0]["id"].(string)
	if id != domain.ConversationID(wt.shopID, customer) {
		t.Fatalf("conversation id %s", id)
	}
	ai := other.list("/api/v1/conversations?filter[queue]=ai_concierge", pos)
	if len(ai) != 1 || ai[0]["id"] == id {
		t.Fatalf("the pro_plus shop's conversations %v", ai)
	}
	msgs := c.list("/api/v1/conversations/"+id+"/messages?limit=10", pos)
	if len(msgs) != 1 || attrs(msgs[0])["text"] != question || attrs(msgs[0])["direction"] != "inbound" {
		t.Fatalf("messages %v", msgs)
	}

	// Another shop's conversation is not found; the scopes are
	// customers:read and customers:write.
	other.fails(404, "not_found", "", http.MethodGet, "/api/v1/conversations/"+id, "")
	other.fails(404, "not_found", "", http.MethodGet, "/api/v1/conversations/"+id+"/messages", "")
	other.fails(404, "not_found", "", http.MethodPost, "/api/v1/conversations/"+id+"/messages", `{"data":{"attributes":{"text":"hi"}}}`)
	other.fails(404, "not_found", "", http.MethodPost, "/api/v1/conversations/"+id+"/close", "")
	readOnly := cli(t, dir, "tokens", "create", "--shop", wt.shopID, "--scopes", "customers:read")
	noScope := cli(t, dir, "tokens", "create", "--shop", wt.shopID, "--scopes", "products:read")
	waitForToken(t, s, tenant{token: noScope["token"].(string), position: uint64(noScope["position"].(float64))})
	ro := catalogClient{t: t, s: s, v: v, token: readOnly["token"].(string)}
	none := catalogClient{t: t, s: s, v: v, token: noScope["token"].(string)}
	none.fails(403, "scope_required", "", http.MethodGet, "/api/v1/conversations", "")
	ro.ok(200, http.MethodGet, "/api/v1/conversations/"+id, "")
	ro.fails(403, "scope_required", "", http.MethodPost, "/api/v1/conversations/"+id+"/messages", `{"data":{"attributes":{"text":"hi"}}}`)
	ro.fails(403, "scope_required", "", http.MethodPost, "/api/v1/conversations/"+id+"/assign", `{"data":{"attributes":{"assignee":"a"}}}`)

	// Bad replies, and a reply outside the 24-hour window: 422 naming
	// text, nothing sent.
	c.fails(422, "validation_failed", "text", http.MethodPost, "/api/v1/conversations/"+id+"/messages", `{"data":{"attributes":{"text":"  "}}}`)
	c.fails(422, "validation_failed", "text", http.MethodPost, "/api/v1/conversations/"+id+"/messages",
		`{"data":{"attributes":{"text":"`+strings.Repeat("é", domain.MaxReplyText+1)+`"}}}`)
	old := domain.ConversationID(wt.shopID, domain.CustomerIDFromPhone(wt.shopID, late))
	c.fails(422, "validation_failed", "text", http.MethodPost, "/api/v1/conversations/"+old+"/messages",
		`{"data":{"attributes":{"text":"Sorry for the wait"}}}`)
	if r := c.call(http.MethodPost, "/api/v1/conversations/"+old+"/messages", `{"data":{"attributes":{"text":"Sorry"}}}`); !bytes.Contains(r.body, []byte("24 hours")) {
		t.Fatalf("outside the window: %s", r.body)
	}

	// A human reply: 202, sent once as a text (the same Idempotency-Key
	// answers the same message and sends nothing more).
	answer := "It left our warehouse today conv-secret-answer"
	body := `{"data":{"attributes":{"text":"` + answer + `"}}}`
	r := c.ok(202, http.MethodPost, "/api/v1/conversations/"+id+"/messages", body, "Idempotency-Key", "reply-1")
	reply := data(r, t)
	if attrs(reply)["status"] != "queued" || attrs(reply)["text"] != answer || !strings.HasPrefix(reply["id"].(string), "msg_") {
		t.Fatalf("reply %v", reply)
	}
	again := c.ok(202, http.MethodPost, "/api/v1/conversations/"+id+"/messages", body, "Idempotency-Key", "reply-1")
	if data(again, t)["id"] != reply["id"] {
		t.Fatalf("a repeated reply answered %v", data(again, t))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := api.WaitCount(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var thread []map[string]any
	eventually(t, 30*time.Second, "the reply is sent", func() bool {
		thread = c.list("/api/v1/conversations/"+id+"/messages", "")
		return len(thread) == 2 && attrs(thread[1])["status"] == "sent"
	})
	if attrs(thread[1])["direction"] != "outbound" || attrs(thread[1])["text"] != answer || thread[1]["id"] != reply["id"] {
		t.Fatalf("thread %v", thread)
	}
	// The agency shop's AI concierge answered its customer's "Hello":
	// only the pro shop's messages are this reply.
	var sent []whatsapptest.Sent
	for _, m := range api.Sent() {
		if m.Token == "EAAG-test-token-7001" {
			sent = append(sent, m)
		}
	}
	if len(sent) != 1 || sent[0].Type != "text" || sent[0].Text != answer || sent[0].To != digits || sent[0].Token != "EAAG-test-token-7001" ||
		sent[0].CallbackData != reply["id"] {
		t.Fatalf("sent %+v", sent)
	}
	cv := data(c.ok(200, http.MethodGet, "/api/v1/conversations/"+id, ""), t)
	if attrs(cv)["unread_count"] != 0.0 || attrs(cv)["queue"] != "human" {
		t.Fatalf("after the reply %v", cv)
	}
	// It is in the message log, and its status webhook lands on it.
	if r := waPost(t, s, v, wt.appSecret, waStatus(wt.waba, sent[0].WAMID, "delivered", "", time.Now().Unix())); r.status != http.StatusOK {
		t.Fatalf("status: %d %s", r.status, r.body)
	}
	eventually(t, 20*time.Second, "the reply's status in the message log", func() bool {
		log := c.list("/api/v1/messages?filter[customer_id]="+customer, "")
		return len(log) == 1 && log[0]["id"] == reply["id"] && attrs(log[0])["delivered_at"] != nil
	})

	// Assign, close, and the next inbound message reopens it in the
	// shop's inbound queue (the AI concierge's on agency, which answers
	// the greeting).
	a := data(c.ok(200, http.MethodPost, "/api/v1/conversations/"+id+"/assign", `{"data":{"attributes":{"assignee":"alice@shop"}}}`,
		"Idempotency-Key", "assign-1"), t)
	if attrs(a)["assignee"] != "alice@shop" {
		t.Fatalf("assigned %v", a)
	}
	c.fails(422, "validation_failed", "assignee", http.MethodPost, "/api/v1/conversations/"+id+"/assign",
		`{"data":{"attributes":{"assignee":"`+strings.Repeat("x", domain.MaxAssignee+1)+`"}}}`)
	closed := c.ok(200, http.MethodPost, "/api/v1/conversations/"+id+"/close", "")
	if attrs(data(closed, t))["queue"] != "closed" {
		t.Fatalf("closed %v", data(closed, t))
	}
	if n := len(c.list("/api/v1/conversations?filter[queue]=closed", closed.position(t))); n != 1 {
		t.Fatalf("%d closed conversations", n)
	}
	pos = receive(t, s, v, wt, inboundText(t, wt.waba, digits, "wamid.conv-3", "Hello again conv-secret-more", time.Now()))
	cv = data(c.ok(200, http.MethodGet, "/api/v1/conversations/"+id, "", "X-Wait-For-Position", pos), t)
	if attrs(cv)["queue"] != "ai_concierge" || attrs(cv)["unread_count"] != 1.0 || attrs(cv)["assignee"] != "alice@shop" {
		t.Fatalf("reopened %v", cv)
	}

	eventually(t, 30*time.Second, "the concierge's answer", func() bool {
		thread = c.list("/api/v1/conversations/"+id+"/messages", "")
		return len(thread) == 4 && attrs(thread[3])["author"] == "ai_concierge" && attrs(thread[3])["status"] == "sent"
	})

	// Erasing the customer (its phone names the conversation) erases the
	// texts everywhere.
	redact := fmt.Sprintf(`{"shop_id":59000001,"shop_domain":%q,"customer":{"id":7700123,"email":"conv@example.org","phone":"+%s"},"orders_to_redact":[]}`,
		wt.domain, digits)
	if r := s.webhook(t, wt.tenant, "customers/redact", "conv-redact", []byte(redact)); r.status != http.StatusOK {
		t.Fatalf("customers/redact: %d %s", r.status, r.body)
	}
	eventually(t, 30*time.Second, "the conversation's texts erased", func() bool {
		thread = c.list("/api/v1/conversations/"+id+"/messages", "")
		for _, m := range thread {
			if attrs(m)["text"] != nil || attrs(m)["redacted"] != true {
				return false
			}
		}
		return len(thread) == 4
	})
	c.fails(422, "validation_failed", "text", http.MethodPost, "/api/v1/conversations/"+id+"/messages", `{"data":{"attributes":{"text":"hi"}}}`)
	secrets := []string{"conv-secret-question", "conv-secret-answer", "conv-secret-more"}
	var hits []string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("found in %v", hits)
		}
	})
	eventually(t, 30*time.Second, "the texts gone from every file", func() bool {
		var err error
		hits, _, _, err = app.SearchDataDir(dir, secrets)
		return err == nil && len(hits) == 0
	})
	assertNowhere(t, "after the customer's erasure", dir, s.logs.String(), secrets)
	if n := api.Count(); n != 3 {
		t.Fatalf("%d messages sent in all, want the human reply and the concierge's two greetings", n)
	}
}
