// Package platformapi is the client of the commerce platform's OAuth and
// Admin API, written against the platform's documented contract (Shopify's,
// the de-facto standard for commerce apps): the authorization-code grant
// with its HMAC-signed redirects, the token endpoint (expiring offline
// tokens with refresh), and the Admin GraphQL API the service acts through
// (webhook subscriptions, order cancellation and refunds, product
// updates).
//
// Every address is built from Config.BaseURL, where "{shop}" stands for
// the shop's domain: production's "https://{shop}" reaches each shop's own
// host; tests serve the contract from one httptest server with
// "http://127.0.0.1:port/{shop}". The shop's domain is validated
// (ValidShop) before it is put in an address, and the HTTP client given is
// expected to be the outbound guard's (outbound.NewClient).
package platformapi
