package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
)

// proofPerson is a customer with personal data no other test data holds,
// so finding any of it in a file means it was kept.
type proofPerson struct {
	ext                                     int64
	email, first, last, phone, street, text string
	order                                   int64
}

func newProofPerson(i int) proofPerson {
	return proofPerson{ext: int64(880100 + i), email: fmt.Sprintf("vexmoor%d.ulquist@proof-erasure.example", i),
		first: fmt.Sprintf("Zyphorn%dq", i), last: fmt.Sprintf("Quillabet%dq", i), phone: fmt.Sprintf("+1555019%04d", 7310+i),
		street: fmt.Sprintf("%d Brackenwhistle Lane", 40+i), order: int64(99120000 + i),
		text: fmt.Sprintf("please send the parcel to my aunt Wilhelmbrook%d", i)}
}

// values are the personal values to look for, the phone also as digits.
func (p proofPerson) values() []string {
	var out []string
	for _, v := range []string{p.email, p.first, p.last, p.phone, domain.PhoneDigits(p.phone), p.street, p.text} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

func (p proofPerson) customerBody() []byte {
	return []byte(fmt.Sprintf(`{"id":%d,"email":%q,"accepts_marketing":true,"created_at":"2026-02-01T10:00:00-05:00",
"updated_at":"2026-02-01T10:00:00-05:00","first_name":%q,"last_name":%q,"orders_count":0,"state":"enabled","total_spent":"0.00",
"note":null,"verified_email":true,"tax_exempt":false,"tags":"vip","currency":"USD","phone":%q,
"addresses":[{"id":%d,"customer_id":%d,"first_name":%q,"last_name":%q,"address1":%q,"city":"Ottawa","country":"Canada","zip":"K1A 0A1","phone":%q,"default":true}],
"email_marketing_consent":{"state":"subscribed","opt_in_level":"single_opt_in","consent_updated_at":null}}`,
		p.ext, p.email, p.first, p.last, p.phone, p.ext, p.ext, p.first, p.last, p.street, p.phone))
}

func (p proofPerson) orderBody(t *testing.T) []byte {
	b := testOrder{ext: p.order, customer: fmt.Sprint(p.ext), created: "2026-03-01T10:00:00Z", total: "42.00", financial: "paid"}.body(t)
	b = bytes.ReplaceAll(b, []byte("noor.haddad@example.com"), []byte(p.email))
	b = bytes.ReplaceAll(b, []byte("Noor"), []byte(p.first))
	return bytes.ReplaceAll(b, []byte("Haddad"), []byte(p.last))
}

func (p proofPerson) redactBody(tn tenant) []byte {
	return []byte(fmt.Sprintf(`{"shop_id":59000000,"shop_domain":%q,"customer":{"id":%d,"email":%q,"phone":%q},"orders_to_redact":[%d]}`,
		tn.domain, p.ext, p.email, p.phone, p.order))
}

// message is a WhatsApp text the person sends to the shop.
func (p proofPerson) message(t *testing.T, waba string) []byte {
	b := waFixture(t, "messages_text", waba)
	b = bytes.ReplaceAll(b, []byte("16505551234"), []byte(domain.PhoneDigits(p.phone)))
	b = bytes.ReplaceAll(b, []byte("Sheena Nelson"), []byte(p.first+" "+p.last))
	b = bytes.ReplaceAll(b, []byte("Does it come in another color?"), []byte(p.text))
	return bytes.ReplaceAll(b, []byte("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA="), []byte(fmt.Sprintf("wamid.proof%d", p.ext)))
}

func (p proofPerson) id(tn tenant) string {
	return domain.CustomerIDFromExternal(tn.shopID, fmt.Sprint(p.ext))
}

// gdprVerify runs `cgp gdpr verify` and returns its exit code and report.
func gdprVerify(t *testing.T, dir, shop, customer string, search ...string) (int, app.ErasureReport) {
	t.Helper()
	args := []string{"gdpr", "verify", "--shop", shop, "--customer", customer, "--data-dir", dir, "--warehouse", "sqlite"}
	for _, v := range search {
		args = append(args, "--search", v)
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	var rep app.ErasureReport
	if code != exitUsage {
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("gdpr verify printed %q (stderr %q)", out.String(), errb.String())
		}
	}
	return code, rep
}

// assertNowhere fails when one of values is in a file of dir or in logs.
func assertNowhere(t *testing.T, when, dir string, logs string, values []string) {
	t.Helper()
	hits, files, _, err := app.SearchDataDir(dir, values)
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("%s: only %d files searched", when, files)
	}
	if len(hits) > 0 {
		for _, v := range values {
			if h, _, _, _ := app.SearchDataDir(dir, []string{v}); len(h) > 0 {
				t.Errorf("%s: %q found in %v", when, v, h)
			}
		}
	}
	for _, v := range values {
		if strings.Contains(logs, v) {
			t.Errorf("%s: %q found in the server's logs", when, v)
		}
	}
}

// The proof of erasure (DESIGN.md §5): customers with known personal data
// are recorded through every path that keeps some (profile, order,
// journey enrollment, an idempotent API answer), two are redacted, and
// then no byte of any file of the data directory nor of the logs holds
// their values, while the others stay readable; the same after a replay
// and after a restart.
func TestProofOfErasure(t *testing.T) {
	dir := t.TempDir()
	// With the embedded warehouse on, the profiles are copied to
	// warehouse.db too, and must leave it.
	withWarehouse := func(c *Config) { c.Warehouse = app.WarehouseSQLite }
	s := startServerWith(t, dir, withWarehouse)
	wa := connectWhatsApp(t, s, messagingDB(t, dir), "proof-erasure.example.com", "agency", "3101")
	tn := wa.tenant
	waitForToken(t, s, tn)
	cli(t, dir, "dev", "generate", "--shop", tn.shopID, "--customers", "40", "--orders", "80")
	auth := map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"}
	j := do(t, http.MethodPost, s.base+"/api/v1/journeys", []byte(journeyBody("welcome", "customers/create", "")), auth)
	if j.status != http.StatusCreated {
		t.Fatalf("create journey: %d %s", j.status, j.body)
	}
	journey := j.json(t)["data"].(map[string]any)["id"].(string)

	people := []proofPerson{newProofPerson(0), newProofPerson(1), newProofPerson(2), newProofPerson(3)}
	var last uint64
	for _, p := range people {
		s.deliver(t, tn, "customers/create", fmt.Sprintf("proof-c-%d", p.ext), p.customerBody())
		last = s.deliver(t, tn, shopify.TopicOrdersCreate, fmt.Sprintf("proof-o-%d", p.ext), p.orderBody(t))
		if r := waPost(t, s, nil, wa.appSecret, p.message(t, wa.waba)); r.status != http.StatusOK {
			t.Fatalf("whatsapp message: %d %s", r.status, r.body)
		}
	}
	for _, p := range people {
		r := s.get(t, "/api/v1/customers/"+p.id(tn), tn.token, "X-Wait-For-Position", fmt.Sprint(last))
		if r.status != http.StatusOK || !bytes.Contains(r.body, []byte(p.email)) {
			t.Fatalf("customer before erasure: %d %s", r.status, r.body)
		}
		// An idempotent API answer naming the customer (with its e-mail).
		h := map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json", "Idempotency-Key": "tag-" + p.first}
		if r := do(t, http.MethodPatch, s.base+"/api/v1/customers/"+p.id(tn), []byte(`{"data":{"attributes":{"tags":["proof"]}}}`), h); r.status != http.StatusOK {
			t.Fatalf("patch: %d %s", r.status, r.body)
		}
	}
	eventually(t, 20*time.Second, "every customer enrolled", func() bool {
		r := s.get(t, "/api/v1/journeys/"+journey+"/enrollments?limit=100", tn.token)
		return r.status == http.StatusOK && bytes.Count(r.body, []byte(`"active"`)) >= len(people)
	})

	erased, kept := people[:2], people[2:]
	var erasedValues []string
	for _, p := range erased {
		start := time.Now()
		r := s.webhook(t, tn, "customers/redact", fmt.Sprintf("proof-r-%d", p.ext), p.redactBody(tn))
		if r.status != http.StatusOK {
			t.Fatalf("customers/redact: %d %s", r.status, r.body)
		}
		t.Logf("customers/redact acknowledged in %v", time.Since(start))
		erasedValues = append(erasedValues, p.values()...)
	}
	// A redact for a customer the service never heard of is recorded and
	// answered 200; a repeated one changes nothing.
	ghost := proofPerson{ext: 770001, email: "ghost@proof-erasure.example", phone: "+15550000001", order: 1}
	if r := s.webhook(t, tn, "customers/redact", "proof-r-ghost", ghost.redactBody(tn)); r.status != http.StatusOK {
		t.Fatalf("redact of an unknown customer: %d %s", r.status, r.body)
	}
	if r := s.webhook(t, tn, "customers/redact", "proof-r-again", erased[0].redactBody(tn)); r.status != http.StatusOK {
		t.Fatalf("repeated redact: %d %s", r.status, r.body)
	}

	for _, p := range append([]proofPerson{ghost}, erased...) {
		var rep app.ErasureReport
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("last report: %+v", rep)
			}
		})
		eventually(t, 30*time.Second, "gdpr verify of "+p.id(tn), func() bool {
			var code int
			code, rep = gdprVerify(t, dir, tn.shopID, p.id(tn), p.values()...)
			return code == 0
		})
	}
	for _, p := range erased {
		r := s.get(t, "/api/v1/customers/"+p.id(tn), tn.token)
		if r.status != http.StatusOK {
			t.Fatalf("erased customer: %d %s", r.status, r.body)
		}
		at := r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
		if at["email"] != nil || at["first_name"] != nil || at["phone"] != nil {
			t.Fatalf("erased customer still shows personal data: %v", at)
		}
	}
	enr := s.get(t, "/api/v1/journeys/"+journey+"/enrollments?limit=100&filter[status]=exited", tn.token)
	for _, p := range erased {
		if !bytes.Contains(enr.body, []byte(p.id(tn))) {
			t.Fatalf("the enrollment of %s was not exited: %s", p.id(tn), enr.body)
		}
	}
	checkKept := func(s *testServer) {
		t.Helper()
		for _, p := range kept {
			r := s.get(t, "/api/v1/customers/"+p.id(tn), tn.token)
			if r.status != http.StatusOK || !bytes.Contains(r.body, []byte(p.email)) || !bytes.Contains(r.body, []byte(p.first)) {
				t.Fatalf("a customer not erased is no longer readable: %d %s", r.status, r.body)
			}
		}
	}
	// Data arriving about an erased customer afterwards is recorded without
	// its personal fields.
	late := s.deliver(t, tn, "customers/update", "proof-late", erased[0].customerBody())
	if r := s.get(t, "/api/v1/customers/"+erased[0].id(tn), tn.token, "X-Wait-For-Position", fmt.Sprint(late)); r.status != http.StatusOK ||
		bytes.Contains(r.body, []byte(erased[0].email)) {
		t.Fatalf("a late update of an erased customer: %d %s", r.status, r.body)
	}
	checkKept(s)
	assertNowhere(t, "after erasure", dir, s.logs.String(), erasedValues)
	if hits, _, _, _ := app.SearchDataDir(dir, []string{kept[0].email}); !slices.ContainsFunc(hits, func(h string) bool { return strings.HasPrefix(h, "warehouse.db") }) {
		t.Fatalf("a kept customer's profile is not in the warehouse (found in %v): the test would prove nothing of it", hits)
	}
	// The search finds what is kept: the message text of a customer not
	// erased is in the messaging read model.
	if hits, _, _, _ := app.SearchDataDir(dir, []string{kept[0].text}); len(hits) == 0 {
		t.Fatal("the search over the data directory does not even find a kept customer's message")
	}
	code, rep := gdprVerify(t, dir, tn.shopID, kept[0].id(tn), kept[0].email)
	failed := map[string]bool{}
	for _, c := range rep.Checks {
		failed[c.Name] = !c.OK
	}
	if code == 0 || rep.Erased || !failed["data_key_shredded"] || !failed["profile_nulled"] || !failed["warehouse_nulled"] ||
		!failed["values_absent_from_every_file"] {
		t.Fatalf("gdpr verify of a customer never erased: %+v", rep)
	}

	s.stop()
	replayCLI(t, dir)
	assertNowhere(t, "after a replay", dir, s.logs.String(), erasedValues)
	s2 := startServerWith(t, dir, withWarehouse)
	checkKept(s2)
	// The replay ran no reactor: the erase reactor's follow-ups were
	// copied with its checkpoint; verify waits for the restarted server.
	for _, p := range erased {
		eventually(t, 30*time.Second, "gdpr verify after replay and restart", func() bool {
			code, _ := gdprVerify(t, dir, tn.shopID, p.id(tn), p.values()...)
			return code == 0
		})
	}
	s2.stop()
	assertNowhere(t, "after a restart", dir, s.logs.String()+s2.logs.String(), erasedValues)
}
