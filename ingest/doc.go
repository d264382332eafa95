// Package ingest receives the inbound webhooks: it limits the body size,
// verifies the signature over the raw bytes in constant time, and turns each
// delivery into a command whose event id is derived from the delivery id,
// so a repeated delivery appends nothing. It answers 2xx only after the
// append is durable. No business rules live here.
//
// It imports domain, eventlog, commands, auth (the public surface) and httpapi.
package ingest
