package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/projections/commerce"
)

// publishedDir holds the platform's published example payloads and their
// real-world variants (README.md there names the source).
var publishedDir = filepath.Join("..", "..", "ingest", "shopify", "testdata", "published")

// publishedFiles returns the fixture files of topic: its published example
// first, then its variants (<topic>--<variant>.json), sorted.
func publishedFiles(t *testing.T, topic string) []string {
	t.Helper()
	base := strings.ReplaceAll(topic, "/", "_")
	variants, err := filepath.Glob(filepath.Join(publishedDir, base+"--*.json"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(variants)
	return append([]string{filepath.Join(publishedDir, base+".json")}, variants...)
}

// whatsAppPublished are the WhatsApp Cloud API examples the service maps
// (ingest/whatsapp/testdata/README.md). unknown_field.json and
// messages_errors.json (a value with errors only, no message or status)
// carry nothing the service maps and are kept as recorded deliveries by
// design, so they are left out.
var whatsAppPublished = []string{
	"messages_text", "messages_image", "messages_interactive",
	"statuses_sent", "statuses_delivered", "statuses_read", "statuses_failed",
	"template_approved", "template_paused", "template_rejected",
	"quality_rated", "quality_flagged", "quality_throughput",
	"account_alerts", "account_review_update",
}

// TestPublishedPayloadsMap (issue 14, point 4): the platform's published
// example payload of each of the 27 topics, and real-world variants of
// them (string and null ids, checkout lines with only a key, guests,
// missing optional objects), sent signed through the server's receiver,
// each become their domain event: none is recorded as an unprocessable,
// refused or unhandled delivery. A checkout whose lines carry a key and no
// id yields its attribution touchpoint. The WhatsApp Cloud API examples
// map too.
func TestPublishedPayloadsMap(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "published.myshopify.com", "agency", "*")
	waitForToken(t, s, tn)
	db := readModels(t, dir)

	seen := map[string]bool{}
	var deliveries []string
	var last uint64
	send := func(topic, file string) {
		t.Helper()
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		seen[filepath.Base(file)] = true
		body := []byte(strings.ReplaceAll(string(raw), "{shop}.myshopify.com", tn.domain))
		id := "pub-" + filepath.Base(file)
		r := do(t, http.MethodPost, s.base+webhookPath(topic), body, webhookHeaders(tn, topic, id, body))
		if r.status != http.StatusOK {
			t.Fatalf("%s as %s: %d %s", filepath.Base(file), topic, r.status, r.body)
		}
		p, _ := strconv.ParseUint(r.position(t), 10, 64)
		last = max(last, p)
		deliveries = append(deliveries, id)
	}
	// Every topic in the specification's order; shop/redact, which erases
	// the shop, after the touchpoint is checked.
	for _, topic := range shopify.Topics() {
		if topic == shopify.TopicShopRedact {
			continue
		}
		for _, f := range publishedFiles(t, topic) {
			send(topic, f)
		}
	}
	waitProjected(t, db, commerce.Name, last)
	k, err := commerce.NewQueries(db).Checkout(context.Background(), tn.shopID, domain.CheckoutIDFromExternal(tn.shopID, "981820079255243600"))
	if err != nil {
		t.Fatalf("the checkout with key-only lines left no touchpoint: %v", err)
	}
	if k.UTM["source"] != "newsletter" || k.UTM["campaign"] != "winter" || k.ClickIDs["gclid"] == "" || k.TotalPrice != amount(t, "398.00") {
		t.Errorf("touchpoint of the key-only checkout: %+v", k)
	}
	for _, f := range publishedFiles(t, shopify.TopicShopRedact) {
		send(shopify.TopicShopRedact, f)
	}
	all, err := os.ReadDir(publishedDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if strings.HasSuffix(e.Name(), ".json") && !seen[e.Name()] {
			t.Errorf("%s: not named after a topic the service maps", e.Name())
		}
	}

	// The WhatsApp Cloud API examples, for a shop with a connected account.
	rm := messagingDB(t, dir)
	wt := connectWhatsApp(t, s, rm, "published-wa.example", "agency", "987650000000001")
	for _, name := range whatsAppPublished {
		if r := waPost(t, s, nil, wt.appSecret, waFixture(t, name, wt.waba)); r.status != http.StatusOK {
			t.Fatalf("WhatsApp %s: %d %s", name, r.status, r.body)
		}
	}
	s.stop()

	types := map[string]string{}
	ids := map[string]string{}
	for _, d := range deliveries {
		ids[eventlog.DeterministicID("commerce", tn.shopID, d).String()] = d
	}
	recorded := 0
	for _, e := range readLog(t, dir) {
		if d, ok := ids[e.ID.String()]; ok {
			types[d] = e.Type
		}
		if e.Type == "WebhookDeliveryRecorded" {
			recorded++
		}
	}
	for _, d := range deliveries {
		if types[d] == "" || types[d] == "WebhookDeliveryRecorded" {
			t.Errorf("%s became %q, want its domain event", d, types[d])
		}
	}
	if recorded != 0 {
		t.Errorf("%d deliveries recorded without effect (commerce and WhatsApp), want 0", recorded)
	}
}
