package httpapi

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/gorilla/handlers"
)

// stripProxyHeaders removes the headers a reverse proxy uses to pass on the
// client's address, scheme and host, so that no later code can be fooled by
// an untrusted peer sending them.
func stripProxyHeaders(h http.Header) {
	for _, name := range [...]string{
		"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto",
		"X-Forwarded-Scheme", "X-Real-Ip", "Forwarded",
	} {
		h.Del(name)
	}
}

// trustedProxies wraps next so that proxy headers are honoured (through
// handlers.ProxyHeaders) only when the TCP peer is inside one of the trusted
// prefixes. With no prefix, proxy headers are never honoured.
//
// handlers.ProxyHeaders takes the first X-Forwarded-For entry, which a client
// can forge when the proxy appends to the header. Before handing over, the
// header is therefore cut down to the right-most entry that is not itself a
// trusted proxy: the address the nearest trusted proxy actually saw.
func trustedProxies(prefixes []netip.Prefix, next http.Handler) http.Handler {
	proxied := handlers.ProxyHeaders(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if peer := ClientIP(r); !peer.IsValid() || !inPrefixes(prefixes, peer) {
			stripProxyHeaders(r.Header)
			next.ServeHTTP(w, r)
			return
		}
		if values := r.Header.Values("X-Forwarded-For"); len(values) > 0 {
			if client, ok := forwardedClient(prefixes, values); ok {
				r.Header.Set("X-Forwarded-For", client.String())
			} else {
				// Unparsable chain: fall back to the proxy's own address
				// rather than trust any part of it.
				r.Header.Del("X-Forwarded-For")
				r.Header.Del("X-Real-Ip")
				r.Header.Del("Forwarded")
			}
		}
		proxied.ServeHTTP(w, r)
	})
}

// forwardedClient walks the X-Forwarded-For chain from the right and returns
// the first address that is not a trusted proxy (or the left-most one when
// every hop is trusted).
func forwardedClient(prefixes []netip.Prefix, values []string) (netip.Addr, bool) {
	var hops []string
	for _, v := range values {
		hops = append(hops, strings.Split(v, ",")...)
	}
	var last netip.Addr
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseAddr(strings.TrimSpace(hops[i]))
		if !ok {
			return netip.Addr{}, false
		}
		if !inPrefixes(prefixes, a) {
			return a, true
		}
		last = a
	}
	return last, last.IsValid()
}

func inPrefixes(prefixes []netip.Prefix, a netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientIP returns the client's address: the TCP peer, or, when the peer is
// a trusted proxy (see StackConfig.TrustedProxies), the address the proxy
// reported. It returns the zero Addr when the address cannot be parsed.
// IPv4-mapped IPv6 addresses are unmapped. It is the key for brute-force
// counters; it is personal data, so never log it.
func ClientIP(r *http.Request) netip.Addr {
	a, _ := parseAddr(r.RemoteAddr)
	return a
}

// parseAddr accepts "ip", "ip:port", "[ipv6]:port" and "[ipv6]".
func parseAddr(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}
