package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"code.dny.dev/ssrf"
)

// ErrAddressRefused is the guard's refusal: the destination is, or
// resolved to, an address the service must not connect to (loopback,
// private, link-local, multicast or another special-purpose range), or
// its host is written in a form that hides which address it is.
var ErrAddressRefused = errors.New("destination address refused")

// ClientOptions configure NewClient.
type ClientOptions struct {
	// AllowPrivate lifts the guard: any address may be connected to
	// (self-hosted setups whose endpoints live on a private network, and
	// tests that serve an endpoint on 127.0.0.1). Off by default.
	AllowPrivate bool
	// TLSConfig, when set, is the client's TLS configuration (tests trust
	// their own server's certificate with it).
	TLSConfig *tls.Config
	// Timeout bounds one request, the answer included; none when zero
	// (bound the request's context instead).
	Timeout time.Duration
}

// NewClient returns the one HTTP client the service uses to connect to an
// address a shop or merchant chose (the data-request URL, outbound
// webhooks). Unless AllowPrivate is set, its dialer checks every address
// it actually connects to, after DNS resolution (so a name that resolves,
// or later re-resolves, to a private address is refused), against
// code.dny.dev/ssrf's deny lists of the IANA special-purpose registries:
// only public unicast TCP addresses pass, on any port. It never follows a
// redirect (the 3xx answer is returned as is) and never uses a proxy from
// the environment (a proxy would connect on our behalf, unguarded).
func NewClient(o ClientOptions) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !o.AllowPrivate {
		d.Control = ssrf.New(ssrf.WithAnyPort()).Safe
	}
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		TLSClientConfig:       o.TLSConfig,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConns:          256,
		// Deliveries to one endpoint run concurrently: keep that many
		// connections open rather than dialling for each.
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &http.Client{
		Transport:     t,
		Timeout:       o.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckURL reports whether raw is an endpoint the service may post to,
// at the time it is set: an absolute https URL with a host, no user
// information (credentials in a URL end up in logs and proxies) and no
// fragment, whose host is a DNS name or an IP address in its canonical
// form. Unless allowPrivate is set, a host that is an IP address must be
// a public one, a name must not be a local one (localhost, *.localhost,
// *.local, *.internal, *.home.arpa, a single label), and a host that
// ends in a number must be a plain dotted IPv4 address (0177.0.0.1,
// 2130706433 and 0x7f.1 are refused: resolvers read them as 127.0.0.1).
// allowPrivate also admits plain http. A refused address wraps
// ErrAddressRefused. The guard at connect time (NewClient) checks the
// address again, after resolution.
func CheckURL(raw string, allowPrivate bool) error {
	if len(raw) > 2048 {
		return errors.New("the URL is longer than 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowPrivate:
	default:
		return errors.New("the URL must use https")
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("the URL has no host")
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		return errors.New("the URL must not carry credentials")
	}
	if u.Fragment != "" {
		return errors.New("the URL must not have a fragment")
	}
	if u.Opaque != "" {
		return errors.New("not a URL")
	}
	if allowPrivate {
		return nil
	}
	return checkHost(u.Hostname())
}

// checkHost applies CheckURL's rules to a host without port or brackets.
func checkHost(host string) error {
	refuse := func(why string) error { return &refusedError{why: why} }
	if strings.Contains(host, "%") {
		return refuse("the URL's host must not carry an IPv6 zone")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ssrf.New(ssrf.WithAnyPort()).SafeAddr(ip) != nil {
			return refuse("the URL's host is a loopback, private, link-local or other special-purpose address")
		}
		return nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	labels := strings.Split(name, ".")
	last := labels[len(labels)-1]
	if numeric(last) {
		return refuse("the URL's host is an IP address in an unusual notation; write it as a.b.c.d")
	}
	if len(labels) < 2 {
		return refuse("the URL's host is a single-label (local) name")
	}
	switch last {
	case "localhost", "local", "internal", "arpa", "test", "invalid", "lan", "home", "corp", "intranet", "private":
		return refuse("the URL's host is a local name")
	}
	return nil
}

// numeric reports whether a label is a number as IPv4 parsers read it
// (decimal, octal with a leading 0, or hex with 0x), so a host ending in
// it is taken for an IPv4 address (WHATWG URL "ends in a number").
func numeric(label string) bool {
	if label == "" {
		return false
	}
	if rest, ok := strings.CutPrefix(label, "0x"); ok {
		for _, c := range rest {
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
		return true
	}
	for _, c := range label {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

type refusedError struct{ why string }

func (e *refusedError) Error() string { return e.why }
func (e *refusedError) Unwrap() error { return ErrAddressRefused }

// transportReason names a transport failure coarsely, without its text
// (which carries the address and the port): a shop reading its recorded
// failures learns only that its endpoint was refused, unreachable, slow
// or spoke bad TLS, never what answered on which port.
func transportReason(ctx context.Context, err error) string {
	var ne net.Error
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.Is(err, ssrf.ErrProhibitedIP), errors.Is(err, ssrf.ErrProhibitedNetwork),
		errors.Is(err, ssrf.ErrProhibitedPort), errors.Is(err, ssrf.ErrInvalidHostPort):
		return ReasonAddressRefused
	case errors.Is(err, context.Canceled) && ctx.Err() != context.DeadlineExceeded:
		return ReasonCanceled
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	case errors.As(err, &certErr), errors.As(err, &recErr), errors.As(err, &alert), errors.As(err, &unknownAuth),
		errors.As(err, &hostErr):
		return ReasonTLSFailed
	default:
		return ReasonConnectFailed
	}
}
