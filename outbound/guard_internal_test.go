package outbound

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestGuardRefusesAtConnectTime: the guarded client refuses every
// special address at the moment it connects, URL checks aside: the
// literal addresses of the SSRF report, and names that resolve to
// loopback (localhost), so DNS cannot smuggle one past the
// check made when the URL was set. The endpoint, listening on
// 127.0.0.1, never sees a request; the reason recorded is the coarse
// address_refused, never the dial error. With AllowPrivate the same
// endpoint is reached.
func TestGuardRefusesAtConnectTime(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	tlsConf := srv.Client().Transport.(*http.Transport).TLSClientConfig
	c := NewClient(ClientOptions{TLSConfig: tlsConf, Timeout: 10 * time.Second})
	refused := []string{"127.0.0.1", "[::1]", "localhost", "169.254.169.254", "10.0.0.1", "[::ffff:127.0.0.1]",
		"0.0.0.0", "192.168.0.1", "[fd00::1]"}
	for _, host := range refused {
		ctx := context.Background()
		_, err := c.Get("https://" + host + ":" + port + "/")
		if err == nil || transportReason(ctx, err) != ReasonAddressRefused {
			t.Errorf("%s: %v, reason %q, want address_refused", host, err, transportReason(ctx, err))
		}
	}
	// Forms Go's resolver does not read as addresses go to the system
	// resolver, which may read them as 127.0.0.1: refused then, or not
	// resolved at all, never connected.
	for _, host := range []string{"0177.0.0.1", "2130706433", "0x7f000001"} {
		ctx := context.Background()
		_, err := c.Get("https://" + host + ":" + port + "/")
		if r := transportReason(ctx, err); err == nil || (r != ReasonAddressRefused && r != ReasonConnectFailed) {
			t.Errorf("%s: %v, reason %q", host, err, r)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the guarded client reached the endpoint %d times", n)
	}
	open := NewClient(ClientOptions{AllowPrivate: true, TLSConfig: tlsConf, Timeout: 10 * time.Second})
	resp, err := open.Get("https://127.0.0.1:" + port + "/")
	if err != nil {
		t.Fatalf("with AllowPrivate: %v", err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Fatalf("hits %d", hits.Load())
	}
}

// TestGuardNeverFollowsRedirects: a 3xx pointing at a private address
// is returned as is, its target never requested.
func TestGuardNeverFollowsRedirects(t *testing.T) {
	var followed atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Store(true) }))
	defer target.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/internal", http.StatusFound)
	}))
	defer srv.Close()
	resp, err := NewClient(ClientOptions{AllowPrivate: true}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || followed.Load() {
		t.Fatalf("status %d, followed %v", resp.StatusCode, followed.Load())
	}
}

// Retry-After comes from any endpoint: it never panics and is never
// negative.
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{"", "7", "0", "-1", "99999999999", "Fri, 27 Nov 2026 12:01:00 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", " 12 "} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if d := retryAfter(v, now); d < 0 {
			t.Fatalf("Retry-After %q: %v", v, d)
		}
	})
}
