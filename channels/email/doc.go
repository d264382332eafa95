// Package email is the e-mail channel's client: it builds an RFC 5322
// message with MIME (a text/plain part and, when given, a text/html
// alternative, quoted-printable in UTF-8, with the RFC 8058 one-click
// unsubscribe headers; with attachments, a multipart/mixed of that body
// and base64 files named by Content-Disposition) and submits it to one
// SMTP relay with github.com/emersion/go-smtp: STARTTLS whenever the relay
// offers it (required unless the relay is on loopback), AUTH PLAIN when
// credentials are set, then MAIL FROM, RCPT TO and DATA.
//
// Every failure is a *channels.SendError whose Code is safe to record: a
// fixed word (invalid_request, connect_failed, timeout, …) or the relay's
// status ("smtp_451" retryable, "smtp_550" not); it never holds an
// address, a body or the relay's free text, which may echo the recipient.
//
// It owns no state, reads no clock and no environment: the caller gives
// the message's Date and the relay's settings. It imports the standard
// library, channels and go-smtp (with go-sasl) only; dataexport mails its
// exports through it.
package email
