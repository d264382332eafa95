package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// logLines decodes the server's JSON log lines.
func logLines(t *testing.T, s *testServer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestLogLinesCarryUnitsCodesAndWebhookIDs: durations carry their unit in
// the field name, a 4xx access line its error code, a webhook line its
// topic and delivery id, and probes are at debug level.
func TestLogLinesCarryUnitsCodesAndWebhookIDs(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) { c.LogLevel = "info" })
	tn := newTenant(t, dir, "logs.example.com", "agency", "*")
	waitForToken(t, s, tn)
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := s.get(t, p, ""); r.status != 200 {
			t.Fatalf("%s: %d", p, r.status)
		}
	}
	unauth := s.get(t, "/api/v1/customers", "")
	body := customerPayload(4242, "logs@example.com", 0, "0.00", "2026-11-01T10:00:00Z")
	hook := s.webhook(t, tn, "customers/create", "dlv-logs-1", body)
	if unauth.status != 401 || hook.status != 200 {
		t.Fatalf("requests: %d %d %s", unauth.status, hook.status, hook.body)
	}
	s.stop() // every line written

	var sawUnauth, sawHook bool
	for _, l := range logLines(t, s) {
		for k := range l {
			if k == "duration" || k == "grace" || k == "since_request" || k == "elapsed" {
				t.Errorf("field %q carries no unit: %v", k, l)
			}
		}
		if l["message"] != "request" {
			continue
		}
		if r := l["route"]; r == "/healthz" || r == "/readyz" {
			t.Errorf("probe logged at info: %v", l)
		}
		if _, ok := l["duration_ms"].(float64); !ok {
			t.Errorf("access line without duration_ms: %v", l)
		}
		switch l["request_id"] {
		case unauth.header.Get("X-Request-Id"):
			sawUnauth = l["error_code"] == "authentication_required" && l["status"] == 401.0
		case hook.header.Get("X-Request-Id"):
			sawHook = l["topic"] == "customers/create" && l["delivery_id"] == "dlv-logs-1" && l["error_code"] == nil
		}
	}
	if !sawUnauth || !sawHook {
		t.Fatalf("4xx line with error_code: %v, webhook line with topic and delivery_id: %v\n%s", sawUnauth, sawHook, s.logs.String())
	}
	if strings.Contains(s.logs.String(), tn.secret) || strings.Contains(s.logs.String(), "logs@example.com") {
		t.Fatal("logs hold the webhook secret or personal data")
	}
}

// TestLogFormat: --log-format console writes zerolog's human-readable
// lines, json (and auto when stderr is not a terminal) JSON lines; an
// unknown format is bad usage.
func TestLogFormat(t *testing.T) {
	for _, c := range []struct {
		format string
		json   bool
	}{{"console", false}, {"json", true}, {"auto", true}, {"", true}} {
		var buf bytes.Buffer
		log := newLogger(&Config{LogLevel: "info", LogFormat: c.format}, &buf)
		log.Info().Str("shop_id", "shop_1").Msg("hello")
		isJSON := json.Valid(bytes.TrimSpace(buf.Bytes()))
		if isJSON != c.json || !strings.Contains(buf.String(), "hello") || !strings.Contains(buf.String(), "shop_1") {
			t.Errorf("format %q: %q", c.format, buf.String())
		}
		if !c.json && (!strings.Contains(buf.String(), "INF") || !strings.Contains(buf.String(), "shop_id=shop_1")) {
			t.Errorf("console format %q", buf.String())
		}
	}
	dir := t.TempDir()
	if code, _, stderr := runCLI("accounts", "list", "--log-format", "pretty", "--data-dir", dir); code != exitUsage || !strings.Contains(stderr, "log-format") {
		t.Errorf("bad format: exit %d %q", code, stderr)
	}
	t.Setenv("CGP_LOG_FORMAT", "console")
	if code, _, stderr := runCLI("accounts", "list", "--data-dir", dir); code != 0 {
		t.Errorf("CGP_LOG_FORMAT=console: exit %d %q", code, stderr)
	}
}
