// Package outbound signs and sends the service's outbound HTTP
// notifications (DESIGN.md §7): a JSON body POSTed to a subscriber's HTTPS
// endpoint, signed with HMAC-SHA256 of the raw body under the endpoint's
// secret in X-Service-Signature: sha256=<hex>, with X-Service-Event-Id,
// X-Service-Event-Type and X-Service-Timestamp beside it.
//
// Sign and Verify are the signature; Sender posts one message through the
// guard, never follows a redirect, and refuses plain http unless the
// operator allows private addresses (--outbound-allow-private). Failures
// carry a coarse Reason (address_refused, connect_failed, tls_failed,
// timeout, http_<status>…), never the body, the URL, the dial error or
// the secret, so it can be recorded and shown without revealing ports.
//
// NewClient is the guard every connection to an address a shop or
// merchant chose goes through (code.dny.dev/ssrf checks the address
// actually dialled); CheckURL checks such a URL when it is set.
//
// It imports the standard library and code.dny.dev/ssrf.
package outbound
