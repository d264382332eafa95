package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/ingest/marketplace"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/projections/marketplaces"
)

// seller is a marketplace seller account connected to a shop in a test,
// with the payloads its marketplace sends.
type seller struct {
	marketplace, account, secret, appKey string
	// order is the body of an order delivery; delivery is its id where the
	// contract carries it in the body.
	order func(delivery, account, orderID, status string) []byte
	// malformed is a body that is not JSON but still names the account
	// where the contract reads it from the body.
	malformed func(account string) []byte
}

func sellers() []seller {
	return []seller{{
		marketplace: "etsy", account: "42", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		order: func(_, account, orderID, status string) []byte {
			return fmt.Appendf(nil, `{"event_type":"order.%s","resource_url":"https://openapi.etsy.com/v3/application/shops/%s/receipts/%s","shop_id":%s}`,
				status, account, orderID, account)
		},
		malformed: func(account string) []byte {
			return fmt.Appendf(nil, `{"shop_id":%s,"event_type":"order.paid","resource_url": oops`, account)
		},
	}, {
		marketplace: "tiktok_shop", account: "7494049642642441621", secret: "tiktok-app-secret-0123456789", appKey: "68xu9ks5p4i8",
		order: func(delivery, account, orderID, status string) []byte {
			return fmt.Appendf(nil, `{"type":1,"tts_notification_id":%q,"shop_id":%q,"timestamp":1767258000,"data":{"order_id":%q,"order_status":%q,"update_time":1767258000,"recipient_address":{"name":"Ada Buyer"}}}`,
				delivery, account, orderID, status)
		},
		malformed: func(account string) []byte { return fmt.Appendf(nil, `{"shop_id":%q,"type":1,"data":{`, account) },
	}, {
		marketplace: "generic", account: "acct-0001", secret: "generic-marketplace-secret-01",
		order: func(_, _, orderID, status string) []byte {
			return fmt.Appendf(nil, `{"type":"order.updated","order":{"id":%q,"status":%q,"total":"25.50","currency":"EUR"},"buyer":{"name":"Ada Buyer"}}`,
				orderID, status)
		},
		malformed: func(string) []byte { return []byte(`{"type": not json`) },
	}}
}

func (sl seller) contract(t *testing.T) *marketplace.Contract {
	t.Helper()
	c, ok := marketplace.Lookup(sl.marketplace)
	if !ok {
		t.Fatalf("no contract %s", sl.marketplace)
	}
	return c
}

// sign returns the headers of a delivery signed with secret at at.
func (sl seller) sign(t *testing.T, secret, account, delivery string, at time.Time, body []byte) map[string]string {
	t.Helper()
	h, err := sl.contract(t).Sign(secret, sl.appKey, account, delivery, at, body)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// connect runs `cgp marketplaces connect` for the seller.
func (sl seller) connect(t *testing.T, dir, shop string) map[string]any {
	t.Helper()
	args := []string{"marketplaces", "connect", "--shop", shop, "--marketplace", sl.marketplace, "--account-id", sl.account, "--secret", sl.secret}
	if sl.appKey != "" {
		args = append(args, "--app-key", sl.appKey)
	}
	return cli(t, dir, args...)
}

// postMarketplace posts a delivery and validates the answer against the
// OpenAPI document.
func (s *testServer) postMarketplace(t *testing.T, v *openapitest.Validator, name string, body []byte, h map[string]string) response {
	t.Helper()
	r := do(t, http.MethodPost, s.base+"/webhooks/marketplaces/"+name, body, h)
	v.ValidateResponse(t, r.req, r.resp, r.body)
	return r
}

// waitForConnection waits until the receiver's read model has the seller's
// connection with secret.
// waitForConnection waits until the read model has the connection with
// secret, which it keeps sealed with the shop key: the wait opens it with
// the data directory's keys, as another process of the service would.
func waitForConnection(t *testing.T, dir string, q *marketplaces.Queries, sl seller, secret string) {
	t.Helper()
	cfg := testConfig(dir)
	core, err := OpenCore(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close()
	eventually(t, 10*time.Second, sl.marketplace+" connection", func() bool {
		c, err := q.Connection(context.Background(), sl.marketplace, sl.account)
		if err != nil || c.Secret == secret || !strings.HasPrefix(c.Secret, "sec1:") {
			return false // not there yet (a secret in clear never matches)
		}
		opened, err := core.Codec.OpenSecret(context.Background(), c.ShopID, marketplaces.SecretLabel, c.Secret)
		return err == nil && opened == secret
	})
}

func TestMarketplaceContractsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "marketplaces.example.com", "agency", "*")
	q := marketplaces.NewQueries(readModels(t, dir))
	var signatures []string
	for _, sl := range sellers() {
		t.Run(sl.marketplace, func(t *testing.T) {
			out := sl.connect(t, dir, tn.shopID)
			if out["rotated"] != false || out["account_id"] != sl.account || out["webhook_path"] != "/webhooks/marketplaces/"+sl.marketplace {
				t.Fatalf("connect output %v", out)
			}
			waitForConnection(t, dir, q, sl, sl.secret)
			now := time.Now()

			// A good delivery is recorded and reaches the read model.
			body := sl.order("dlv-good-"+sl.marketplace, sl.account, "5001", "paid")
			h := sl.sign(t, sl.secret, sl.account, "dlv-good-"+sl.marketplace, now, body)
			signatures = append(signatures, h[sl.contract(t).Signature])
			if r := s.postMarketplace(t, v, sl.marketplace, body, h); r.status != 200 || r.position(t) == "0" {
				t.Fatalf("good delivery: %d %s", r.status, r.body)
			}
			eventually(t, 10*time.Second, "order in the read model", func() bool {
				o, err := q.Order(context.Background(), tn.shopID, sl.marketplace, "5001")
				return err == nil && o.Status == "paid" && o.AccountID == sl.account
			})

			// Refusals: all 401, and only a missing header says which.
			refuse := func(what, code string, body []byte, h map[string]string) {
				t.Helper()
				r := s.postMarketplace(t, v, sl.marketplace, body, h)
				if r.status != 401 || r.errorCode(t) != code {
					t.Errorf("%s: %d %s, want 401 %s", what, r.status, r.body, code)
				}
			}
			c := sl.contract(t)
			wrong := sl.sign(t, otherSecret(sl.secret), sl.account, "dlv-wrong", now, body)
			refuse("wrong signature", "invalid_signature", body, wrong)
			altered := append(bytes.Clone(body[:len(body)-1]), ' ', '}')
			refuse("altered body", "invalid_signature", altered, sl.sign(t, sl.secret, sl.account, "dlv-altered", now, body))
			missing := sl.sign(t, sl.secret, sl.account, "dlv-missing", now, body)
			delete(missing, c.Signature)
			refuse("missing signature", "signature_required", body, missing)
			other := "999000111"
			unknown := sl.order("dlv-unknown", other, "5002", "paid")
			refuse("unknown account", "invalid_signature", unknown, sl.sign(t, sl.secret, other, "dlv-unknown", now, unknown))
			if c.Timestamp != "" {
				stale := now.Add(-c.Tolerance - time.Minute)
				refuse("stale timestamp", "invalid_signature", body, sl.sign(t, sl.secret, sl.account, "dlv-stale", stale, body))
				refuse("future timestamp", "invalid_signature", body, sl.sign(t, sl.secret, sl.account, "dlv-future", now.Add(c.Tolerance+time.Minute), body))
			}

			// Malformed JSON after a valid signature: acknowledged and recorded.
			bad := sl.malformed(sl.account)
			r := s.postMarketplace(t, v, sl.marketplace, bad, sl.sign(t, sl.secret, sl.account, "dlv-bad-"+sl.marketplace, now, bad))
			if r.status != 200 {
				t.Fatalf("malformed payload: %d %s", r.status, r.body)
			}
			deliveryID := "dlv-bad-" + sl.marketplace
			if c.Delivery.Header == "" { // TikTok Shop: no id in a broken body, so the body's hash
				deliveryID = marketplaceDeliveryHash(bad)
			}
			recorded := eventlog.DeterministicID("marketplace", sl.marketplace, tn.shopID, deliveryID).String()
			if n := countTyped(readLog(t, dir), recorded, "WebhookDeliveryRecorded"); n != 1 {
				t.Fatalf("malformed payload recorded %d times as a delivery", n)
			}
		})
	}
	s.stop()
	logs := s.logs.String()
	for _, secret := range append(signatures, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "tiktok-app-secret", "generic-marketplace-secret", "Ada Buyer") {
		if strings.Contains(logs, secret) {
			t.Errorf("server logs contain %q", secret)
		}
	}
}

// otherSecret changes the last character of a secret (a valid secret of
// the same form: base64 stays base64).
func otherSecret(secret string) string {
	if strings.HasSuffix(secret, "x") {
		return secret[:len(secret)-1] + "y"
	}
	return secret[:len(secret)-1] + "x"
}

// marketplaceDeliveryHash is the delivery id the receiver falls back to for
// a body without one.
func marketplaceDeliveryHash(body []byte) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256(body))
}

func countTyped(events []eventlog.Event, id, typ string) int {
	n := 0
	for _, e := range events {
		if e.ID.String() == id && e.Type == typ {
			n++
		}
	}
	return n
}

func TestMarketplaceRotationUnknownMarketplaceAndLimits(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "rotation.example.com", "agency", "*")
	q := marketplaces.NewQueries(readModels(t, dir))
	sl := sellers()[2] // generic
	sl.connect(t, dir, tn.shopID)
	waitForConnection(t, dir, q, sl, sl.secret)

	body := sl.order("", "", "7001", "paid")
	if r := s.postMarketplace(t, v, "amazon", body, sl.sign(t, sl.secret, sl.account, "dlv-1", time.Now(), body)); r.status != 404 || r.errorCode(t) != "not_found" {
		t.Errorf("unknown marketplace: %d %s", r.status, r.body)
	}
	big := bytes.Repeat([]byte(" "), 2<<20)
	if r := s.postMarketplace(t, v, sl.marketplace, big, sl.sign(t, sl.secret, sl.account, "dlv-big", time.Now(), big)); r.status != 413 {
		t.Errorf("2 MiB body: %d %s", r.status, r.body)
	}
	noID := sl.sign(t, sl.secret, sl.account, "", time.Now(), body)
	if r := s.postMarketplace(t, v, sl.marketplace, body, noID); r.status != 400 || r.errorCode(t) != "invalid_parameter" {
		t.Errorf("no delivery id: %d %s", r.status, r.body)
	}

	// Reconnecting rotates the secret: the old one stops verifying.
	old := sl.secret
	sl.secret = "generic-marketplace-secret-02"
	if out := sl.connect(t, dir, tn.shopID); out["rotated"] != true {
		t.Fatalf("reconnect: %v", out)
	}
	waitForConnection(t, dir, q, sl, sl.secret)
	if r := s.postMarketplace(t, v, sl.marketplace, body, sl.sign(t, old, sl.account, "dlv-old", time.Now(), body)); r.status != 401 {
		t.Errorf("old secret after rotation: %d %s", r.status, r.body)
	}
	if r := s.postMarketplace(t, v, sl.marketplace, body, sl.sign(t, sl.secret, sl.account, "dlv-new", time.Now(), body)); r.status != 200 {
		t.Errorf("new secret: %d %s", r.status, r.body)
	}
	// Other kinds are notifications, with their type as sent.
	note := []byte(`{"type":"listing.suppressed","resource_id":"SKU-77","buyer":{"email":"ada@example.com"}}`)
	if r := s.postMarketplace(t, v, sl.marketplace, note, sl.sign(t, sl.secret, sl.account, "dlv-note", time.Now(), note)); r.status != 200 {
		t.Fatalf("notification: %d %s", r.status, r.body)
	}
	eventually(t, 10*time.Second, "notification in the read model", func() bool {
		ns, err := q.Notifications(context.Background(), tn.shopID)
		return err == nil && len(ns) == 1 && ns[0].Kind == "listing.suppressed" && ns[0].ResourceID == "SKU-77"
	})
}

func TestMarketplaceDeduplication(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "mp-dedup.example.com", "agency", "*")
	q := marketplaces.NewQueries(readModels(t, dir))
	for _, sl := range sellers() {
		sl.connect(t, dir, tn.shopID)
		waitForConnection(t, dir, q, sl, sl.secret)
	}
	sequential := map[string]string{}
	concurrent := map[string]string{}
	for _, sl := range sellers() {
		// Sequential repeats of one delivery (re-signed each time, as a
		// sender's retry is).
		body := sl.order("dlv-seq-"+sl.marketplace, sl.account, "8001", "paid")
		for i := 0; i < 3; i++ {
			h := sl.sign(t, sl.secret, sl.account, "dlv-seq-"+sl.marketplace, time.Now(), body)
			if r := s.postMarketplace(t, v, sl.marketplace, body, h); r.status != 200 {
				t.Fatalf("%s repeat %d: %d %s", sl.marketplace, i, r.status, r.body)
			}
		}
		sequential[sl.marketplace] = eventlog.DeterministicID("marketplace", sl.marketplace, tn.shopID, "dlv-seq-"+sl.marketplace).String()

		// Concurrent repeats of another.
		body = sl.order("dlv-conc-"+sl.marketplace, sl.account, "8002", "paid")
		h := sl.sign(t, sl.secret, sl.account, "dlv-conc-"+sl.marketplace, time.Now(), body)
		postConcurrently(t, 16, s.base+"/webhooks/marketplaces/"+sl.marketplace, h, body)
		concurrent[sl.marketplace] = eventlog.DeterministicID("marketplace", sl.marketplace, tn.shopID, "dlv-conc-"+sl.marketplace).String()
	}
	events := readLog(t, dir)
	for _, sl := range sellers() {
		if n := countEvent(events, sequential[sl.marketplace]); n != 1 {
			t.Errorf("%s sequential duplicates: recorded %d times", sl.marketplace, n)
		}
		if n := countEvent(events, concurrent[sl.marketplace]); n != 1 {
			t.Errorf("%s concurrent duplicates: recorded %d times", sl.marketplace, n)
		}
		for _, order := range []string{"8001", "8002"} {
			stream := domain.MarketplaceOrderStream(domain.MarketplaceOrderID(tn.shopID, sl.marketplace, order))
			n := 0
			for _, e := range events {
				if e.StreamID == stream {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s order %s: %d events, want 1", sl.marketplace, order, n)
			}
		}
	}
}

func TestMarketplacesConnectCLI(t *testing.T) {
	dir := t.TempDir()
	shopA := newTenant(t, dir, "cli-a.example.com", "agency", "*").shopID
	shopB := newTenant(t, dir, "cli-b.example.com", "agency", "*").shopID
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), append(args, "--data-dir", dir), &out, &errb)
		return code, out.String(), errb.String()
	}
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	code, out, errOut := run("marketplaces", "connect", "--shop", shopA, "--marketplace", "etsy", "--account-id", "42", "--secret", secret)
	if code != 0 || !strings.Contains(out, `"rotated":false`) || strings.Contains(out+errOut, secret) || strings.Contains(out, "MfKQ9r8") {
		t.Fatalf("connect: exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	// The env twins work like the flags; the same shop reconnecting rotates.
	t.Setenv("CGP_SHOP", shopA)
	t.Setenv("CGP_MARKETPLACE", "etsy")
	t.Setenv("CGP_ACCOUNT_ID", "42")
	t.Setenv("CGP_SECRET", "whsec_c2Vjb25kLXNlY3JldC1vZi10aGUtc2VsbGVy")
	if code, out, errOut := run("marketplaces", "connect"); code != 0 || !strings.Contains(out, `"rotated":true`) {
		t.Fatalf("reconnect from the environment: exit %d, %s %s", code, out, errOut)
	}
	for _, env := range []string{"CGP_SHOP", "CGP_MARKETPLACE", "CGP_ACCOUNT_ID", "CGP_SECRET"} {
		t.Setenv(env, "")
	}
	cases := []struct {
		name string
		args []string
		exit int
	}{
		{"unknown marketplace", []string{"--shop", shopA, "--marketplace", "amazon", "--account-id", "1", "--secret", "generic-secret-0123"}, exitUsage},
		{"missing secret", []string{"--shop", shopA, "--marketplace", "generic", "--account-id", "1"}, exitUsage},
		{"missing account", []string{"--shop", shopA, "--marketplace", "generic", "--secret", "generic-secret-0123"}, exitUsage},
		{"short secret", []string{"--shop", shopA, "--marketplace", "generic", "--account-id", "1", "--secret", "short"}, exitUsage},
		{"etsy secret not base64", []string{"--shop", shopA, "--marketplace", "etsy", "--account-id", "7", "--secret", "whsec_not-base64-at-all!!"}, exitUsage},
		{"tiktok without app key", []string{"--shop", shopA, "--marketplace", "tiktok_shop", "--account-id", "7", "--secret", "tiktok-secret-0123456"}, exitUsage},
		{"unknown flag", []string{"--shop", shopA, "--nope"}, exitUsage},
		{"account of another shop", []string{"--shop", shopB, "--marketplace", "etsy", "--account-id", "42", "--secret", secret}, exitFailure},
		{"unknown shop", []string{"--shop", "shop_missing", "--marketplace", "generic", "--account-id", "9", "--secret", "generic-secret-0123"}, exitFailure},
	}
	for _, c := range cases {
		code, out, errOut := run(append([]string{"marketplaces", "connect"}, c.args...)...)
		if code != c.exit || out != "" || errOut == "" {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q", c.name, code, c.exit, out, errOut)
		}
		for i, a := range c.args {
			if a == "--secret" && i+1 < len(c.args) && strings.Contains(errOut, c.args[i+1]) {
				t.Errorf("%s: stderr repeats the secret: %s", c.name, errOut)
			}
		}
	}
	if code, _, _ := run("marketplaces"); code != exitUsage {
		t.Errorf("bare group: exit %d", code)
	}
}
