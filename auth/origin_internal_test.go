package auth

import (
	"net/url"
	"strings"
	"testing"
)

// TestOriginHost: only https origins with a bare host (or the default
// port 443) yield a host to compare with the allow-list.
func TestOriginHost(t *testing.T) {
	for origin, want := range map[string]string{
		"https://shop.example.com":          "shop.example.com",
		"https://Shop.Example.COM":          "shop.example.com",
		"https://shop.example.com:443":      "shop.example.com",
		"http://shop.example.com":           "",
		"https://x@shop.example.com":        "",
		"https://x:y@shop.example.com":      "",
		"https://shop.example.com@evil.net": "",
		"https://shop.example.com:8443":     "",
		"https://shop.example.com:":         "",
		"https://shop.example.com/":         "",
		"https://shop.example.com/path":     "",
		"https://shop.example.com?x=1":      "",
		"https://shop.example.com#x":        "",
		"https://shop.example.com.":         "",
		"https://shop%2eexample.com":        "",
		"HTTPS://shop.example.com":          "",
		"https://[::1]":                     "",
		"https://":                          "",
		"null":                              "",
		"":                                  "",
		"shop.example.com":                  "",
		"ws://shop.example.com":             "",
	} {
		if got := originHost(origin); got != want {
			t.Errorf("originHost(%q) = %q, want %q", origin, got, want)
		}
	}
}

// FuzzOriginHost: originHost never panics, and a host it admits is a
// bare lowercase DNS name taken from an https origin with no user
// information, path or port other than 443.
func FuzzOriginHost(f *testing.F) {
	for _, s := range []string{"https://shop.example.com", "http://shop.example.com", "https://x@shop.example.com",
		"https://shop.example.com:443", "https://shop.example.com:8443", "https://[::1]:443", "null"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, origin string) {
		host := originHost(origin)
		if host == "" {
			return
		}
		u, err := url.Parse(origin)
		if err != nil || u.Scheme != "https" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" ||
			strings.ToLower(u.Hostname()) != host || (u.Port() != "" && u.Port() != "443") {
			t.Fatalf("admitted %q as %q", origin, host)
		}
		if strings.ContainsAny(host, "@:/[]%") || host != strings.ToLower(host) {
			t.Fatalf("host %q of %q", host, origin)
		}
	})
}
