package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/internal/smtptest"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/reviews"
	"github.com/cgp-platform/cgp/sending"
)

// editJSON returns b with edit applied to its decoded object.
func editJSON(t *testing.T, b []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// openCheckout is the checkouts/update fixture as an open checkout (id)
// of the customer of external id customer, with its recovery link.
func openCheckout(t *testing.T, id, customer int64, recovery string) []byte {
	return editJSON(t, fixture(t, "checkouts/update"), func(m map[string]any) {
		m["id"], m["token"] = id, fmt.Sprintf("tok%032d", id)
		m["completed_at"], m["abandoned_checkout_url"] = nil, recovery
		m["customer"].(map[string]any)["id"] = customer
	})
}

// flowOrder is the topic's order fixture as order id (name #id) of the
// customer of external id customer, cancelled when cancelled is set.
func flowOrder(t *testing.T, topic string, id, customer int64, cancelled string) []byte {
	return editJSON(t, fixture(t, topic), func(m map[string]any) {
		m["id"], m["name"] = id, "#"+strconv.FormatInt(id, 10)
		m["customer"].(map[string]any)["id"] = customer
		if cancelled != "" {
			m["cancelled_at"], m["updated_at"] = cancelled, cancelled
		}
	})
}

// TestBuiltInFlows: with a controllable clock, the cart abandonment e-mails
// a consenting customer whose checkout stayed open 4 hours, with the
// checkout's recovery link, and not a customer who ordered after the
// checkout nor one without consent; the review request e-mails the buyer
// of each fulfilled order 7 days later, consent or not (transactional),
// with a review link whose token the service accepts as proof of that
// order, but not an unsubscribed buyer nor a cancelled order; the runs
// survive a restart and each message is sent once.
func TestBuiltInFlows(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixMicro())
	now := func() time.Time { return time.UnixMicro(clock.Load()) }
	dir := t.TempDir()
	var svc atomic.Pointer[sending.Service]
	var tokens atomic.Pointer[reviews.Tokens]
	var relayAddr string
	mod := func(c *Config) {
		c.Test.Sending.Now = now
		c.Test.Sending.Opened = func(s *sending.Service, tk reviews.Tokens) { svc.Store(s); tokens.Store(&tk) }
		if relayAddr != "" {
			c.SMTPAddr, c.SMTPFrom = relayAddr, "news@shop.example.com"
		}
	}
	s, relay := sendingServer(t, dir, mod)
	relayAddr = relay.Addr
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "flows.example.com", "agency", "*")
	waitForToken(t, s, tn)
	c := catalogClient{t: t, s: s, v: v, token: tn.token}
	post := func(topic, id string, body []byte) string {
		t.Helper()
		r := s.webhook(t, tn, topic, id, body)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", topic, r.status, r.body)
		}
		return r.position(t)
	}
	// A, B subscribed; C never subscribed; D unsubscribed; E never
	// subscribed.
	states := map[int64]string{61001: "subscribed", 61002: "subscribed", 61003: "not_subscribed", 61004: "unsubscribed", 61005: "not_subscribed"}
	for id := int64(61001); id <= 61005; id++ {
		post("customers/create", fmt.Sprintf("fl-c-%d", id), stateCustomer(id, fmt.Sprintf("fl%d@example.com", id), states[id], "not_subscribed"))
	}
	recovery := func(id int64) string {
		return fmt.Sprintf("https://flows.example.com/59000000/checkouts/%d/recover?key=k%d", id, id)
	}
	post("checkouts/update", "fl-k-1", openCheckout(t, 71001, 61001, recovery(71001))) // A, then A orders
	post("checkouts/update", "fl-k-2", openCheckout(t, 71002, 61002, recovery(71002))) // B
	post("checkouts/update", "fl-k-5", openCheckout(t, 71005, 61005, recovery(71005))) // E, no consent
	post("orders/create", "fl-o-1", flowOrder(t, "orders/create", 81001, 61001, ""))
	post("orders/fulfilled", "fl-f-1", flowOrder(t, "orders/fulfilled", 81001, 61001, ""))
	post("orders/fulfilled", "fl-f-3", flowOrder(t, "orders/fulfilled", 81003, 61003, ""))
	post("orders/fulfilled", "fl-f-4", flowOrder(t, "orders/fulfilled", 81004, 61004, ""))
	post("orders/fulfilled", "fl-f-9", flowOrder(t, "orders/fulfilled", 81009, 61001, ""))
	last := post("orders/updated", "fl-u-9", flowOrder(t, "orders/updated", 81009, 61001, "2026-03-12T09:00:00+01:00"))
	waitOutbox := func(pos string) {
		t.Helper()
		p, err := strconv.ParseUint(pos, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := svc.Load().WaitFor(ctx, p); err != nil {
			t.Fatalf("the outbox reactor at %d: %v", p, err)
		}
	}
	waitOutbox(last)

	// The restart: the runs are durable.
	s.stop()
	s = startServerWith(t, dir, mod)
	c = catalogClient{t: t, s: s, v: v, token: tn.token}
	waitOutbox(last)
	if n := relay.Count(); n != 0 {
		t.Fatalf("%d e-mails before any delay passed", n)
	}

	// 4 hours later: the cart abandonment of B only (A ordered, E is
	// skipped), not yet any review request.
	clock.Add((4*time.Hour + time.Minute).Microseconds())
	carts := waitMessages(c, "cart_abandonment", 2)
	if n := relay.Count(); n != 1 {
		t.Fatalf("%d e-mails after 4 hours, want 1", n)
	}
	wantStatuses(t, carts, map[string]string{"fl61002@example.com": "sent", "fl61005@example.com": "skipped:no_consent"}, c)
	b := emailTo(t, relay, "fl61002@example.com")
	if !strings.Contains(b.text, recovery(71002)) || !strings.Contains(b.html, `href="`+strings.ReplaceAll(recovery(71002), "&", "&amp;")+`"`) {
		t.Fatalf("cart e-mail without its recovery link:\n%s\n%s", b.text, b.html)
	}
	if !strings.Contains(b.text, "/api/public/unsubscribe?token=") {
		t.Fatalf("cart e-mail without its unsubscribe link:\n%s", b.text)
	}

	// Switched off, the cart abandonment cancels its waiting runs: F's
	// checkout, open before, is never followed up.
	post("customers/create", "fl-c-61006", stateCustomer(61006, "fl61006@example.com", "subscribed", "not_subscribed"))
	waitOutbox(post("checkouts/update", "fl-k-6", openCheckout(t, 71006, 61006, recovery(71006))))
	off := c.ok(200, http.MethodPatch, "/api/v1/flows/cart_abandonment", `{"data":{"attributes":{"enabled":false}}}`)
	if attrs(data(off, t))["enabled"] != false {
		t.Fatalf("switched off: %s", off.body)
	}
	waitOutbox(off.position(t))

	// 7 days after the fulfilments: the review requests of A's and C's
	// orders; D unsubscribed; order 81009 was cancelled. F's cart stays
	// unsent.
	clock.Add((7 * 24 * time.Hour).Microseconds())
	revs := waitMessages(c, "review_request", 3)
	if n := relay.Count(); n != 3 {
		t.Fatalf("%d e-mails, want 3", n)
	}
	if n := len(c.list("/api/v1/messages?filter[flow]=cart_abandonment", "")); n != 2 {
		t.Fatalf("%d cart abandonment messages, want 2", n)
	}
	wantStatuses(t, revs, map[string]string{"fl61001@example.com": "sent", "fl61003@example.com": "sent",
		"fl61004@example.com": "skipped:no_consent"}, c)
	// A fulfilment recorded longer ago than the delay plus a day, as the
	// sending side reads it (a store rebuilt from an old log), starts no
	// run.
	runs := func() (n int) {
		t.Helper()
		if err := svc.Load().Store.DB().QueryRow(`SELECT COUNT(*) FROM snd_flow_runs WHERE flow = 'review_request'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := runs(); n != 4 {
		t.Fatalf("%d review runs, want 4", n)
	}
	clock.Add((2 * 24 * time.Hour).Microseconds())
	waitOutbox(post("orders/fulfilled", "fl-f-10", flowOrder(t, "orders/fulfilled", 81010, 61001, "")))
	if n := runs(); n != 4 {
		t.Fatalf("%d review runs after an old fulfilment, want 4", n)
	}
	for ext, order := range map[int64]int64{61001: 81001, 61003: 81003} {
		e := emailTo(t, relay, fmt.Sprintf("fl%d@example.com", ext))
		if !strings.Contains(e.text, fmt.Sprintf("order #%d", order)) {
			t.Fatalf("review request without the order's name:\n%s", e.text)
		}
		link := regexp.MustCompile(`https://\S+review_token=\S+`).FindString(e.text)
		u, err := url.Parse(link)
		if err != nil || u.Host != "flows.example.com" || u.Path != "/pages/reviews" {
			t.Fatalf("review link %q (%v)", link, err)
		}
		claims, err := tokens.Load().Parse(u.Query().Get("review_token"), time.Now())
		if err != nil {
			t.Fatalf("review token of %q: %v", link, err)
		}
		cust := findBy(c.list("/api/v1/customers?limit=100", ""), "email", fmt.Sprintf("fl%d@example.com", ext))
		orders := c.list("/api/v1/orders?limit=100", "")
		if claims.CustomerID != cust || claims.ShopID != tn.shopID || !hasOrder(orders, claims.OrderID, order) {
			t.Fatalf("review token claims %+v for customer %d's order %d", claims, ext, order)
		}
	}
}

// findBy returns the id of the resource whose attribute is v.
func findBy(res []map[string]any, attr, v string) string {
	for _, r := range res {
		if attrs(r)[attr] == v {
			return r["id"].(string)
		}
	}
	return ""
}

// hasOrder tells whether orders has the order id of name #ext.
func hasOrder(orders []map[string]any, id string, ext int64) bool {
	for _, o := range orders {
		if o["id"] == id && attrs(o)["name"] == "#"+strconv.FormatInt(ext, 10) {
			return true
		}
	}
	return false
}

// waitMessages waits until the message log has n messages of flow, each
// with an outcome, and returns them.
func waitMessages(c catalogClient, flow string, n int) []map[string]any {
	c.t.Helper()
	var got []map[string]any
	eventually(c.t, time.Minute, fmt.Sprintf("%d messages of %s", n, flow), func() bool {
		got = c.list("/api/v1/messages?filter[flow]="+flow, "")
		return len(got) == n
	})
	return got
}

// wantStatuses checks the messages' statuses (status, or
// status:skip_reason) by recipient address.
func wantStatuses(t *testing.T, msgs []map[string]any, want map[string]string, c catalogClient) {
	t.Helper()
	got := map[string]string{}
	for _, m := range msgs {
		a := attrs(m)
		cust := attrs(data(c.ok(200, http.MethodGet, "/api/v1/customers/"+a["customer_id"].(string), ""), t))
		st := a["status"].(string)
		if r, ok := a["skip_reason"].(string); ok {
			st += ":" + r
		}
		got[cust["email"].(string)] = st
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
}

// sentEmail is an e-mail's decoded text and HTML parts.
type sentEmail struct{ text, html string }

// emailTo returns the one e-mail the relay received for to.
func emailTo(t *testing.T, relay *smtptest.Server, to string) sentEmail {
	t.Helper()
	var found []sentEmail
	for _, m := range relay.Messages() {
		if len(m.To) != 1 || m.To[0] != to {
			continue
		}
		_, text, html := mailParts(t, m.Data)
		found = append(found, sentEmail{text: text, html: html})
	}
	if len(found) != 1 {
		t.Fatalf("%d e-mails to %s, want 1", len(found), to)
	}
	return found[0]
}
