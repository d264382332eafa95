// Package whatsapp receives the messaging platform's webhooks (WhatsApp
// Cloud API payloads) at /webhooks/whatsapp: the subscription handshake
// (GET, hub.mode/hub.verify_token/hub.challenge) and signed notifications
// (POST, X-Hub-Signature-256 keyed with the app secret of every business
// account the body names). It parses the payloads (Parse and the Parse…
// function of each change field, pure and fuzzed) and turns each change
// into commands through the shared delivery pipeline of package ingest.
// No business rules live here.
//
// It imports the standard library, domain, eventlog, commands, httpapi,
// ingest and gorilla/mux.
package whatsapp
