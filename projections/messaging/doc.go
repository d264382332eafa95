// Package messaging is the messaging read model: its projector (stable name
// "messaging") folds the messaging events into the SQLite read-model store:
// connected WhatsApp business accounts (with the app secret and the verify
// token's hash the receiver checks deliveries with), provider connections
// (token hashes only), the message log (delivered_at, opened_at, failed_at,
// error code), inbound messages in their queue (ai_concierge or human),
// message templates and their state, business numbers with their quality
// rating, account alerts and account reviews. Queries serves the receivers
// and the tests.
//
// It imports domain, eventlog, envelope, projections and readmodel.
package messaging
