package outbound_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/outbound"
)

func TestSignVerify(t *testing.T) {
	secret, body := []byte("whsec_test"), []byte(`{"id":"evt_1"}`)
	sig := outbound.Sign(secret, body)
	// HMAC-SHA256("whsec_test", body), computed independently.
	if !strings.HasPrefix(sig, "sha256=") || len(sig) != 7+64 {
		t.Fatalf("signature %q", sig)
	}
	if !outbound.Verify(secret, body, sig) {
		t.Fatal("own signature refused")
	}
	for name, h := range map[string]string{
		"other body":   outbound.Sign(secret, []byte(`{"id":"evt_2"}`)),
		"other secret": outbound.Sign([]byte("other"), body),
		"no prefix":    strings.TrimPrefix(sig, "sha256="),
		"short":        sig[:len(sig)-2],
		"not hex":      "sha256=" + strings.Repeat("zz", 32),
		"empty":        "",
		"upper prefix": "SHA256=" + sig[7:],
	} {
		if outbound.Verify(secret, body, h) {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestNewSecretAndCheckURL(t *testing.T) {
	a, err := outbound.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := outbound.NewSecret()
	if a == b || !strings.HasPrefix(a, "whsec_") || len(a) != 6+43 {
		t.Fatalf("secrets %q %q", a, b)
	}
	for raw, ok := range map[string]bool{
		"https://example.com/gdpr":       true,
		"https://example.com:8443/x?y=1": true,
		"http://example.com/gdpr":        false,
		"https://user:pw@example.com/":   false,
		"https:///path":                  false,
		"ftp://example.com":              false,
		"example.com/gdpr":               false,
		"https://example.com/#frag":      false,
		"":                               false,
	} {
		if err := outbound.CheckURL(raw, false); (err == nil) != ok {
			t.Errorf("%q: %v, want ok=%v", raw, err, ok)
		}
	}
	if err := outbound.CheckURL("http://127.0.0.1:1/x", true); err != nil {
		t.Errorf("http allowed: %v", err)
	}
	if err := outbound.CheckURL("http://127.0.0.1:1/x", false); err == nil {
		t.Error("http admitted without the option")
	}
}

func TestSenderPostsSignedAndNeverFollowsRedirects(t *testing.T) {
	secret := []byte("whsec_abc")
	var got atomic.Value
	var redirected atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !outbound.Verify(secret, b, r.Header.Get(outbound.HeaderSignature)) || r.Method != http.MethodPost ||
			r.Header.Get(outbound.HeaderEventID) != "evt_1" || r.Header.Get(outbound.HeaderEventType) != "customer.data_request" ||
			r.Header.Get(outbound.HeaderTimestamp) != "1790000000" || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		got.Store(string(b))
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) { redirected.Store(true) })
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	s := &outbound.Sender{AllowPrivate: true, TLSConfig: trust(srv), Timeout: 5 * time.Second}
	msg := func(path string) outbound.Message {
		return outbound.Message{URL: srv.URL + path, EventID: "evt_1", EventType: "customer.data_request",
			Timestamp: time.Unix(1790000000, 0), Body: []byte(`{"a":1}`)}
	}
	ctx := context.Background()
	if st, err := s.Send(ctx, secret, msg("/ok")); err != nil || st != http.StatusAccepted || got.Load() != `{"a":1}` {
		t.Fatalf("ok: %d %v %v", st, err, got.Load())
	}
	for path, reason := range map[string]string{"/fail": "http_500", "/moved": "redirect"} {
		_, err := s.Send(ctx, secret, msg(path))
		var oe *outbound.Error
		if !errors.As(err, &oe) || oe.Reason != reason || outbound.Reason(err) != reason {
			t.Errorf("%s: %v, want %s", path, err, reason)
		}
	}
	if redirected.Load() {
		t.Error("a redirect was followed")
	}
	plain := httptest.NewServer(mux)
	defer plain.Close()
	strict := &outbound.Sender{TLSConfig: trust(srv), Timeout: 5 * time.Second}
	if _, err := strict.Send(ctx, secret, outbound.Message{URL: plain.URL + "/ok", Body: []byte("{}")}); outbound.Reason(err) != "invalid_url" {
		t.Errorf("plain http without the option: %v", err)
	}
	if _, err := s.Send(ctx, secret, outbound.Message{URL: plain.URL + "/fail", Body: []byte("{}")}); outbound.Reason(err) != "http_500" {
		t.Errorf("plain http with the option: %v", err)
	}
	untrusted := &outbound.Sender{AllowPrivate: true, Timeout: 5 * time.Second}
	if _, err := untrusted.Send(ctx, secret, msg("/ok")); outbound.Reason(err) != outbound.ReasonTLSFailed {
		t.Errorf("unknown certificate: %v", err)
	}
	closed := httptest.NewTLSServer(mux)
	closed.Close()
	if _, err := s.Send(ctx, secret, outbound.Message{URL: closed.URL + "/ok", Body: []byte("{}")}); outbound.Reason(err) != outbound.ReasonConnectFailed ||
		strings.Contains(err.Error(), closed.URL) {
		t.Errorf("closed server: %v", err)
	}
}

// FuzzVerify: Verify never panics, and accepts exactly Sign's value.
func FuzzVerify(f *testing.F) {
	f.Add([]byte("secret"), []byte(`{"id":"evt_1"}`), "sha256=00")
	f.Add([]byte(""), []byte(""), "")
	f.Add([]byte("k"), []byte("b"), outbound.Sign([]byte("k"), []byte("b")))
	f.Fuzz(func(t *testing.T, secret, body []byte, header string) {
		ok := outbound.Verify(secret, body, header)
		if ok && strings.TrimSpace(header) != outbound.Sign(secret, body) && !strings.EqualFold(strings.TrimSpace(header), outbound.Sign(secret, body)) {
			t.Fatalf("accepted %q", header)
		}
		if !outbound.Verify(secret, body, outbound.Sign(secret, body)) {
			t.Fatal("own signature refused")
		}
	})
}

// FuzzCheckURL: CheckURL never panics and never admits a non-https URL.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/x", "http://a.b", "https://u:p@h/", "javascript:alert(1)", "https://[::1]:443/",
		"https://0177.0.0.1/", "https://2130706433/", "https://[::ffff:127.0.0.1]/", "https://0x7f.1/", "https://[fe80::1%25eth0]/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if outbound.CheckURL(raw, false) != nil {
			return
		}
		if !strings.HasPrefix(raw, "https://") {
			t.Fatalf("admitted %q", raw)
		}
		u, err := url.Parse(raw)
		if err != nil || u.User != nil {
			t.Fatalf("admitted %q", raw)
		}
		if ip, err := netip.ParseAddr(u.Hostname()); err == nil && (!ip.IsGlobalUnicast() || ip.IsPrivate() || ip.Is4In6()) {
			t.Fatalf("admitted the special address of %q", raw)
		}
		if h := strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
			t.Fatalf("admitted the local name of %q", raw)
		}
	})
}

// trust returns a TLS configuration that trusts srv's certificate.
func trust(srv *httptest.Server) *tls.Config {
	return srv.Client().Transport.(*http.Transport).TLSClientConfig
}

// TestCheckURLRefusesSpecialAddresses: at the time a URL is set, every
// address of the SSRF report is refused (wrapping ErrAddressRefused),
// and so are plain http, credentials and local names; with the
// operator's option they pass.
func TestCheckURLRefusesSpecialAddresses(t *testing.T) {
	for _, raw := range []string{
		"https://127.0.0.1/", "https://[::1]/", "https://localhost/", "https://localhost./x", "https://169.254.169.254/latest/meta-data/",
		"https://10.0.0.1/", "https://0177.0.0.1/", "https://2130706433/", "https://[::ffff:127.0.0.1]/", "https://0x7f.0.0.1/",
		"https://127.1/", "https://192.168.1.10:8443/", "https://[fd00::1]/", "https://224.0.0.1/", "https://0.0.0.0/",
		"https://api.localhost/", "https://printer.local/", "https://db.internal/", "https://intranet/", "https://[fe80::1%25eth0]/",
		"https://100.64.0.1/", "https://1.0.0.127.in-addr.arpa/",
	} {
		err := outbound.CheckURL(raw, false)
		if !errors.Is(err, outbound.ErrAddressRefused) {
			t.Errorf("%s: %v, want the address refused", raw, err)
		}
	}
	for _, raw := range []string{"http://shop.example.com/gdpr", "https://user@shop.example.com/", "https://u:p@shop.example.com/"} {
		if err := outbound.CheckURL(raw, false); err == nil {
			t.Errorf("%s: admitted", raw)
		}
	}
	for _, raw := range []string{"https://8.8.8.8/x", "https://[2606:4700::1111]/", "https://hooks.example.com:8443/x", "https://a.b.example.co.uk/"} {
		if err := outbound.CheckURL(raw, false); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
	for _, raw := range []string{"https://127.0.0.1:8443/", "http://localhost:8080/x", "https://10.0.0.1/"} {
		if err := outbound.CheckURL(raw, true); err != nil {
			t.Errorf("%s with the option: %v", raw, err)
		}
	}
}

// During a rotation's overlap the header carries one value per secret: a
// receiver holding either secret verifies it, one holding neither does
// not, and a value for another body never matches.
func TestSignAllVerifiesWithEitherSecret(t *testing.T) {
	oldS, newS, body := []byte("whsec_old"), []byte("whsec_new"), []byte(`{"id":"evt_2"}`)
	h := outbound.SignAll([][]byte{newS, oldS}, body)
	if got := strings.Count(h, "sha256="); got != 2 || !strings.Contains(h, ",") {
		t.Fatalf("header %q: want two comma-separated values", h)
	}
	for _, s := range [][]byte{oldS, newS} {
		if !outbound.Verify(s, body, h) || !outbound.Verify(s, body, strings.ReplaceAll(h, ",", ", ")) {
			t.Errorf("secret %s refused %q", s, h)
		}
	}
	if outbound.Verify([]byte("whsec_other"), body, h) || outbound.Verify(newS, []byte(`{"id":"evt_3"}`), h) {
		t.Error("a wrong secret or body verified")
	}
	if one := outbound.SignAll([][]byte{newS}, body); one != outbound.Sign(newS, body) {
		t.Errorf("one secret: %q, want Sign's %q", one, outbound.Sign(newS, body))
	}
}

// Post reports the status, the first 4 KiB of the body and Retry-After in
// both its forms.
func TestPostReportsTheAnswer(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/date" {
			w.Header().Set("Retry-After", date)
		} else {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, strings.Repeat("x", 10_000))
	}))
	defer srv.Close()
	s := &outbound.Sender{AllowPrivate: true}
	resp, err := s.Post(context.Background(), [][]byte{[]byte("k")}, outbound.Message{URL: srv.URL + "/s", EventID: "evt_1", EventType: "ping", Body: []byte(`{}`)})
	if outbound.Reason(err) != "http_503" || resp.Status != 503 || len(resp.Body) != outbound.MaxResponseBody || resp.RetryAfter != 7*time.Second {
		t.Fatalf("seconds: %v %d %d %v", err, resp.Status, len(resp.Body), resp.RetryAfter)
	}
	resp, _ = s.Post(context.Background(), [][]byte{[]byte("k")}, outbound.Message{URL: srv.URL + "/date", EventID: "evt_1", EventType: "ping", Body: []byte(`{}`)})
	if resp.RetryAfter < 60*time.Second || resp.RetryAfter > 91*time.Second {
		t.Fatalf("date: Retry-After %v, want about 90 s", resp.RetryAfter)
	}
}
