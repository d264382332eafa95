// Package consent owns the unsubscribe links of marketing messages: a
// versioned token, HMAC-SHA256 signed with a key of the service's own,
// that names the shop, the customer, the channel and the message by their
// opaque ids (no personal data), and the public routes that honour it
// (GET /api/public/unsubscribe shows a confirmation page, POST records the
// opt-out, RFC 8058 one-click included).
//
// It imports domain, commands and httpapi; the app wires it.
package consent
