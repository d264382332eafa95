// Package providers receives the delivery callbacks of messaging providers
// that cannot sign their requests: POST /webhooks/providers/{provider}
// with the shop's shared callback token in the query (?token=cpt_…). The
// token is checked before anything else, by its SHA-256 and in constant
// time, and fails closed (403). The body's statuses update the same
// message log as the messaging platform's statuses, through the shared
// delivery pipeline of package ingest.
//
// It imports the standard library, domain, eventlog, commands, httpapi,
// ingest and gorilla/mux.
package providers
