package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
	"github.com/cgp-platform/cgp/projections/messaging"
)

// TestWhatsAppAccessTokenStaysSealed (issue 17, point 1): the access token
// given at `cgp messaging connect --access-token` (or its env twin) is
// nowhere in clear in the data directory or the logs, the audit history
// shows it "[set]", and SendingAccount hands the sending work the token
// sealed, opening to the one given; a bad token is refused with exit 2.
func TestWhatsAppAccessTokenStaysSealed(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	rm := messagingDB(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "wa-token.example.com", "agency", "*")
	const waba, phone = "1000000088", "106540352242988"
	const first, second = "EAAGwaConnectFirstTok3nZZ0123456789abcdef", "EAAGwaConnectSecondTok3nYY9876543210fedcba"
	connect := func(extra ...string) map[string]any {
		t.Helper()
		args := append([]string{"messaging", "connect", "--shop", tn.shopID, "--business-account-id", waba, "--phone-number-id", phone,
			"--app-secret", "app-secret-wa-token-0123456789", "--verify-token", "verify-wa-token"}, extra...)
		out := cli(t, dir, args...)
		waitMessaging(t, rm, uint64(out["position"].(float64)))
		return out
	}
	out := connect("--access-token", first)
	if out["rotated"] != false || strings.Contains(fmt.Sprint(out), first) {
		t.Fatalf("connect output %v", out)
	}

	core, err := OpenCore(context.Background(), testConfig(dir), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	closeCore := sync.OnceValue(core.Close)
	t.Cleanup(func() { closeCore() })
	q := messaging.NewQueries(rm)
	sending := func(want string) {
		t.Helper()
		gotPhone, sealed, err := q.SendingAccount(context.Background(), tn.shopID)
		if err != nil || gotPhone != phone || !strings.HasPrefix(sealed, "sec1:") {
			t.Fatalf("sending account: %q %q %v", gotPhone, sealed, err)
		}
		opened, err := core.Codec.OpenSecret(context.Background(), tn.shopID, messaging.SecretLabel, sealed)
		if err != nil || opened != want {
			t.Fatalf("sealed token opens to %q (%v), want the one given", opened, err)
		}
	}
	sending(first)

	// Connecting again with only a new token, from the env twin: a rotation.
	t.Setenv("CGP_ACCESS_TOKEN", second)
	if out := connect(); out["rotated"] != true {
		t.Fatalf("rotation output %v", out)
	}
	sending(second)

	// A bad token: exit 2, the field named, nothing written.
	for _, bad := range []string{"too-short-tok", "EAAGwaConnect with a space 0123456789"} {
		code, stdout, stderr := runCLI("messaging", "connect", "--shop", tn.shopID, "--business-account-id", waba, "--phone-number-id", "1",
			"--app-secret", "app-secret-wa-token-0123456789", "--verify-token", "verify-wa-token", "--access-token", bad, "--data-dir", dir)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, "access_token") || strings.Contains(stderr, bad) {
			t.Errorf("token %q: exit %d, stdout %q, stderr %q", bad, code, stdout, stderr)
		}
	}
	sending(second)

	// The audit history shows that a token was set, never which.
	position := s.get(t, "/api/v1/customers", tn.token).header.Get("X-Event-Position")
	shown := map[string]int{}
	for cursor := ""; ; {
		q := "limit=100"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		r := s.get(t, "/api/v1/audit-events?"+q, tn.token, "X-Wait-For-Position", position)
		if r.status != 200 {
			t.Fatalf("audit-events: %d %s", r.status, r.body)
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if strings.Contains(string(r.body), first) || strings.Contains(string(r.body), second) {
			t.Fatal("the audit history holds an access token")
		}
		doc := r.json(t)
		for _, d := range doc["data"].([]any) {
			a := d.(map[string]any)["attributes"].(map[string]any)
			if data, _ := a["data"].(map[string]any); data["access_token"] == domain.SecretMarker {
				shown[a["event_type"].(string)]++
			}
		}
		next, _ := doc["pagination"].(map[string]any)["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if shown["WhatsAppAccountConnected"] != 1 || shown["WhatsAppAccountCredentialsRotated"] != 1 {
		t.Errorf("access tokens shown %q in the audit history: %v", domain.SecretMarker, shown)
	}

	if err := closeCore(); err != nil {
		t.Fatal(err)
	}
	s.stop()
	secrets := erasedValues{first, second}
	if found := secrets.findIn(t, dir); len(found) != 0 {
		t.Errorf("access tokens in the data directory: %v", found)
	}
	for _, sec := range secrets {
		if strings.Contains(s.logs.String(), sec) {
			t.Errorf("the logs hold an access token")
		}
	}
}

// TestWhatsAppAPIURLFlag: --whatsapp-api-url and its env twin are checked
// before cgp serve starts: exit 2 naming the flag.
func TestWhatsAppAPIURLFlag(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--whatsapp-api-url", "http://127.0.0.1:1/v26.0"},
		{"--whatsapp-api-url", "https://graph.example.com/v26.0?access_token=x"},
		{"--whatsapp-api-url", "graph.example.com"},
	} {
		code, stdout, stderr := runCLI(append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir}, args...)...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, "whatsapp-api-url") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	t.Setenv("CGP_WHATSAPP_API_URL", "https://graph.example.com/v26.0#frag")
	if code, _, stderr := runCLI("serve", "--addr", "127.0.0.1:0", "--data-dir", dir); code != exitUsage || !strings.Contains(stderr, "whatsapp-api-url") {
		t.Errorf("env twin: exit %d, stderr %q", code, stderr)
	}
}
