// Package httpapi is the HTTP skeleton every surface of the service shares:
// the error envelope and the single place where failures are mapped to a
// status and an error.code (WriteError); request ids and the request-scoped
// logger; the middleware stack (trusted proxy headers, access log, metrics,
// panic recovery, compression); routes registered with their stability
// (X-Service-Stability); the JSON:API-like response envelopes; signed,
// versioned list cursors; list query parsing against an allow-list; request
// body decoding; the operational endpoints (/healthz, /readyz, /metrics); and
// the Server that drains in-flight requests on shutdown.
//
// Resource handlers (customers, webhooks, …) are written on top of it in
// their own packages: they register routes with Handle, parse input with
// ParseList and DecodeData, answer with WriteResource, WriteList and
// WriteError, and never choose a status code for an error themselves.
//
// It may import the standard library, domain, eventlog (for its error
// sentinels only), gorilla/mux, gorilla/handlers, felixge/httpsnoop,
// rs/zerolog and prometheus/client_golang. It reads no environment variable.
package httpapi
