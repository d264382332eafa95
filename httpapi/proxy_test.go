package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cgp-platform/cgp/httpapi"
)

// seenRequest is what the handler saw.
type seenRequest struct {
	IP   string `json:"ip"`
	XFF  string `json:"xff"`
	Next string `json:"next"`
}

func echoClient(r *mux.Router) {
	httpapi.HandleFunc(r, httpapi.Beta, http.MethodGet, "/whoami", func(w http.ResponseWriter, req *http.Request) {
		rec := httptest.NewRecorder()
		httpapi.WriteList(rec, req, nil, httpapi.Page{NextCursor: "abc", HasNext: true})
		var doc struct {
			Links struct{ Next string } `json:"links"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &doc)
		_ = json.NewEncoder(w).Encode(seenRequest{
			IP: httpapi.ClientIP(req).String(), XFF: req.Header.Get("X-Forwarded-For"), Next: doc.Links.Next})
	})
}

func whoami(t *testing.T, e *env, header ...string) seenRequest {
	t.Helper()
	r := e.do(t, http.MethodGet, "/whoami", "", header...)
	var s seenRequest
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
	return s
}

func TestProxyHeadersIgnoredFromUntrustedPeer(t *testing.T) {
	e := newEnv(t, echoClient, withTrustedProxies("10.0.0.0/8"))
	s := whoami(t, e, "X-Forwarded-For", "6.6.6.6", "X-Forwarded-Proto", "https", "X-Forwarded-Host", "evil.example")
	if s.IP != "127.0.0.1" {
		t.Errorf("ClientIP = %s, want the peer 127.0.0.1", s.IP)
	}
	if s.XFF != "" {
		t.Errorf("X-Forwarded-For reached the handler: %q", s.XFF)
	}
	if want := e.srv.URL + "/whoami?cursor=abc"; s.Next != want {
		t.Errorf("links.next = %q, want %q", s.Next, want)
	}
}

func TestProxyHeadersHonouredFromTrustedPeer(t *testing.T) {
	e := newEnv(t, echoClient, withTrustedProxies("127.0.0.0/8", "10.0.0.0/8"))
	cases := []struct{ xff, want string }{
		{"1.2.3.4", "1.2.3.4"},
		{"6.6.6.6, 1.2.3.4", "1.2.3.4"},           // a forged left entry is ignored
		{"6.6.6.6, 1.2.3.4, 10.0.0.7", "1.2.3.4"}, // inner trusted hops are skipped
		{"10.0.0.8, 10.0.0.7", "10.0.0.8"},        // all trusted: the left-most
		{"::ffff:1.2.3.4", "1.2.3.4"},
		{"2001:db8::1", "2001:db8::1"},
		{"not-an-ip, 1.2.3.4", "1.2.3.4"},
		{"1.2.3.4, garbage", "127.0.0.1"}, // unparsable chain: the proxy itself
	}
	for _, c := range cases {
		s := whoami(t, e, "X-Forwarded-For", c.xff)
		if s.IP != c.want {
			t.Errorf("X-Forwarded-For %q: ClientIP = %s, want %s", c.xff, s.IP, c.want)
		}
	}
	s := whoami(t, e, "X-Forwarded-For", "1.2.3.4", "X-Forwarded-Proto", "https", "X-Forwarded-Host", "api.example.com")
	if want := "https://api.example.com/whoami?cursor=abc"; s.Next != want {
		t.Errorf("links.next = %q, want %q", s.Next, want)
	}
}

func TestClientIPParsesRemoteAddr(t *testing.T) {
	cases := map[string]string{
		"1.2.3.4:5678":        "1.2.3.4",
		"[::ffff:1.2.3.4]:80": "1.2.3.4",
		"[2001:db8::1]:443":   "2001:db8::1",
		"2001:db8::2":         "2001:db8::2",
		"9.9.9.9":             "9.9.9.9",
		"[fe80::1%eth0]:80":   "fe80::1",
		"garbage":             "invalid IP",
		"":                    "invalid IP",
	}
	for in, want := range cases {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = in
		if got := httpapi.ClientIP(r).String(); got != want {
			t.Errorf("ClientIP(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestNewStackRejectsInvalidPrefix(t *testing.T) {
	_, err := httpapi.NewStack(httpapi.StackConfig{TrustedProxies: []netip.Prefix{{}}})
	if err == nil {
		t.Fatal("zero prefix accepted")
	}
	reg := prometheus.NewRegistry()
	if _, err := httpapi.NewStack(httpapi.StackConfig{Registry: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := httpapi.NewStack(httpapi.StackConfig{Registry: reg}); err == nil {
		t.Fatal("second stack on the same registry: duplicate metrics accepted")
	}
}
