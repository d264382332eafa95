package outbound_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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
	s := &outbound.Sender{Client: srv.Client(), Timeout: 5 * time.Second}
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
	if _, err := s.Send(ctx, secret, outbound.Message{URL: plain.URL + "/ok", Body: []byte("{}")}); outbound.Reason(err) != "invalid_url" {
		t.Errorf("plain http: %v", err)
	}
	closed := httptest.NewTLSServer(mux)
	closed.Close()
	if _, err := s.Send(ctx, secret, outbound.Message{URL: closed.URL + "/ok", Body: []byte("{}")}); outbound.Reason(err) != "connection_failed" ||
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
	for _, s := range []string{"https://example.com/x", "http://a.b", "https://u:p@h/", "javascript:alert(1)", "https://[::1]:443/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if outbound.CheckURL(raw, false) == nil && !strings.HasPrefix(raw, "https://") {
			t.Fatalf("admitted %q", raw)
		}
	})
}
