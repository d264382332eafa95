// Package sending sends the messages the service speaks with: every
// campaign's message to each recipient of its audience snapshot (and, as
// they come, journeys' steps and the built-in flows), through one port per
// channel (WhatsApp Cloud API, e-mail over SMTP, SMS), and records the
// messages' outcomes (sent, failed, skipped) as events, in batches
// (MessageOutcomesRecorded).
//
// It owns its store (sending.db in the data directory) with its own
// projection runtime, so a replay of the read models never touches it:
// the outbox reactor (message_outbox) follows the log and keeps, in the
// transaction that moves its checkpoint, one outbox row per message to
// send (the log is the outbox: a launch committed is sent even if the
// process dies at once) and each campaign's status; the Dispatcher claims
// due rows, sends them with bounded concurrency (and a bound per shop, so
// one shop's slow provider delays no other), records the outcome through
// the commands, retries retryable failures with backoff, and completes a
// campaign once every recipient has an outcome.
//
// Exactly once: a row is marked in flight (committed) before its send;
// the outcomes are appended in batches with "no stream" under an id
// derived from their message ids, so a batch is recorded once, and the
// outbox reactor marks their rows done from the log. After a crash, a row left in
// flight is in doubt: an e-mail or SMS is sent again (an SMTP relay that
// accepted the data before the crash may deliver twice; the Message-ID is
// the same, by which mail systems drop the duplicate); a WhatsApp message
// waits for the platform's status webhook, which carries the message id
// back (biz_opaque_callback_data), and is recorded sent from it; only
// when no status arrived within the reconcile window is it sent again.
//
// It imports domain, commands, channels/*, envelope, eventlog,
// projections, readmodel and readmodel/sqlite.
package sending
