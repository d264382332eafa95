package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestShopNotificationSettings: GET /api/v1/shop shows the defaults (P1
// and P2 by e-mail and chat, P3 in-app only); PATCH changes them member
// by member, with a 422 naming the member for each bad value and a 403
// for a token without `*`; the CLI's `shops notifications` is the same
// command.
func TestShopNotificationSettings(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "settings.example.com", "agency", "*")
	waitForToken(t, s, tn)
	c := catalogClient{t: t, s: s, v: v, token: tn.token}
	notif := func(r response) map[string]any {
		t.Helper()
		return attrs(data(r, t))["notifications"].(map[string]any)
	}
	got := notif(c.ok(200, http.MethodGet, "/api/v1/shop", ""))
	if fmt.Sprint(got["channels"]) != "map[P1:[email chat] P2:[email chat] P3:[]]" || len(got["emails"].([]any)) != 0 ||
		got["chat_number"] != nil || got["quiet_hours"] != nil {
		t.Fatalf("defaults: %v", got)
	}
	r := c.ok(200, http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"notifications":{"emails":["ops@settings.example.com",
		"ops@settings.example.com","cto@settings.example.com"],"chat_number":"+33 6 12 34 56 78","channels":{"P2":["email"]},
		"quiet_hours":{"start":"22:00","end":"07:00","time_zone":"Europe/Paris"}}}}}`)
	got = notif(r)
	if fmt.Sprint(got["emails"]) != "[ops@settings.example.com cto@settings.example.com]" || got["chat_number"] != "33612345678" ||
		fmt.Sprint(got["channels"]) != "map[P1:[email chat] P2:[email] P3:[]]" ||
		fmt.Sprint(got["quiet_hours"]) != "map[end:07:00 start:22:00 time_zone:Europe/Paris]" {
		t.Fatalf("patched: %v", got)
	}
	got = notif(c.ok(200, http.MethodGet, "/api/v1/shop", "", "X-Wait-For-Position", r.position(t)))
	if got["chat_number"] != "33612345678" || got["quiet_hours"] == nil {
		t.Fatalf("read back: %v", got)
	}
	r = c.ok(200, http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"notifications":{"quiet_hours":null}}}}`)
	if got = notif(r); got["quiet_hours"] != nil || got["chat_number"] != "33612345678" {
		t.Fatalf("quiet hours removed: %v", got)
	}
	for _, bad := range []struct{ body, field string }{
		{`{"emails":["not an address"]}`, "notifications.emails"},
		{`{"emails":["Ann <ann@x.example.com>"]}`, "notifications.emails"},
		{`{"chat_number":"call me"}`, "notifications.chat_number"},
		{`{"channels":{"P4":["email"]}}`, "notifications.channels"},
		{`{"channels":{"P1":["pager"]}}`, "notifications.channels"},
		{`{"quiet_hours":{"start":"25:00","end":"07:00","time_zone":"UTC"}}`, "notifications.quiet_hours.start"},
		{`{"quiet_hours":{"start":"22:00","end":"22:00","time_zone":"UTC"}}`, "notifications.quiet_hours.end"},
		{`{"quiet_hours":{"start":"22:00","end":"07:00","time_zone":"Mars/Olympus"}}`, "notifications.quiet_hours.time_zone"},
		{`{"quiet_hours":{"start":"22:00","end":"07:00","time_zone":"UTC","extra":1}}`, "notifications.quiet_hours"},
		{`{}`, "data.attributes"},
	} {
		c.fails(422, "validation_failed", bad.field, http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"notifications":`+bad.body+`}}}`)
	}
	c.fails(422, "validation_failed", "", http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"plan":"enterprise"}}}`)
	narrow := cli(t, dir, "tokens", "create", "--shop", tn.shopID, "--scopes", "analytics:read,webhooks:write")
	waitForToken(t, s, tenant{token: narrow["token"].(string), position: uint64(narrow["position"].(float64))})
	nc := catalogClient{t: t, s: s, v: v, token: narrow["token"].(string)}
	nc.fails(403, "scope_required", "", http.MethodGet, "/api/v1/shop", "")
	nc.fails(403, "scope_required", "", http.MethodPatch, "/api/v1/shop", `{"data":{"attributes":{"notifications":{"chat_number":""}}}}`)
	// The notifications list is the narrow token's (analytics:read).
	list := nc.ok(200, http.MethodGet, "/api/v1/notifications", "").json(t)
	if list["meta"].(map[string]any)["unread_count"] != 0.0 || len(list["data"].([]any)) != 0 {
		t.Fatalf("no notification yet: %v", list)
	}
	nc.fails(404, "not_found", "", http.MethodPost, "/api/v1/notifications/ntf_doesnotexist/read", "")

	out := cli(t, dir, "shops", "notifications", "--shop", tn.shopID, "--email", "night@settings.example.com", "--p3", "email",
		"--quiet-hours", "23:00-06:30", "--time-zone", "America/New_York")
	n := out["notifications"].(map[string]any)
	if fmt.Sprint(n["emails"]) != "[night@settings.example.com]" || fmt.Sprint(n["channels"]) != "map[P1:[email chat] P2:[email] P3:[email]]" ||
		n["chat_number"] != "33612345678" {
		t.Fatalf("cli: %v", out)
	}
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"shops", "notifications", "--shop", "shop_nobody", "--p1", "email", "--data-dir", dir},
		&stdout, &stderr); code != exitFailure || !strings.Contains(stderr.String(), "shop not found") {
		t.Errorf("an unknown shop: exit %d, %s", code, stderr.String())
	}
	stderr.Reset()
	if code := Run(context.Background(), []string{"shops", "notifications", "--shop", tn.shopID, "--quiet-hours", "22:00-07:00",
		"--time-zone", "Nowhere/Else", "--data-dir", dir}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "time_zone") {
		t.Errorf("a bad time zone: exit %d, %s", code, stderr.String())
	}
}
