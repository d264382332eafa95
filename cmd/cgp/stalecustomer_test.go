package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
)

// TestStaleCustomerUpdateChangesNothing (issue 14, point 3): an older
// customers/update (by the payload's updated_at) delivered after a newer
// one is kept in the log, marked stale, and does not roll the profile back
// (e-mail, platform tags, figures); a newer one still applies.
func TestStaleCustomerUpdateChangesNothing(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "stale-customers.myshopify.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	withTags := func(body []byte, tags string) []byte {
		return []byte(strings.Replace(string(body), `"tags":"imported, newsletter"`, `"tags":"`+tags+`"`, 1))
	}
	id := domain.CustomerIDFromExternal(tn.shopID, "8801")
	attrs := func(pos uint64) map[string]any {
		t.Helper()
		r := s.get(t, "/api/v1/customers/"+id, tn.token, "X-Wait-For-Position", fmt.Sprint(pos))
		if r.status != http.StatusOK {
			t.Fatalf("customer: %d %s", r.status, r.body)
		}
		return r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	}
	s.deliver(t, tn, shopify.TopicCustomersCreate, "stale-c1", withTags(customerPayload(8801, "first@example.org", 1, "10.00", "2026-10-01T10:00:00Z"), "new"))
	s.deliver(t, tn, shopify.TopicCustomersUpdate, "stale-u3", withTags(customerPayload(8801, "newest@example.org", 3, "30.00", "2026-10-03T10:00:00Z"), "vip, gold"))
	// The platform's update of 2 October arrives last.
	pos := s.deliver(t, tn, shopify.TopicCustomersUpdate, "stale-u2", withTags(customerPayload(8801, "older@example.org", 2, "20.00", "2026-10-02T10:00:00Z"), "bronze"))
	a := attrs(pos)
	if a["email"] != "newest@example.org" || fmt.Sprint(a["platform_tags"]) != "[vip gold]" {
		t.Fatalf("after a stale update: email %v, platform tags %v", a["email"], a["platform_tags"])
	}
	// A newer one applies.
	pos = s.deliver(t, tn, shopify.TopicCustomersUpdate, "stale-u4", withTags(customerPayload(8801, "latest@example.org", 4, "40.00", "2026-10-04T10:00:00Z"), "vip"))
	if a := attrs(pos); a["email"] != "latest@example.org" || fmt.Sprint(a["platform_tags"]) != "[vip]" {
		t.Fatalf("after a newer update: email %v, platform tags %v", a["email"], a["platform_tags"])
	}
	s.stop()
	_, got := intakeEvents(t, dir, tn.shopID, "stale-u2")
	if got["stale-u2"] != "CustomerUpdated" {
		t.Fatalf("the stale update became %q, want a CustomerUpdated kept in the log", got["stale-u2"])
	}
}
