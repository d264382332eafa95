// Package whatsapp is the outbound client of the WhatsApp Cloud API: it
// sends template and text messages with
// POST {base}/{phone-number-id}/messages under the business account's
// access token, as Meta documents the endpoint, and returns the
// provider's message id (wamid.…) so that the status webhooks can later be
// matched to the message.
//
// It owns the request bodies, the parsing of the documented answers, and
// the classification of every failure into a *channels.SendError:
// retryable or not, with the provider's numeric error code as Code and
// its Retry-After header as RetryAfter. Nothing it returns holds the
// token, the recipient or the provider's free text (which may echo the
// recipient).
//
// It does not retry, queue, throttle or record anything: the sending path
// that calls it does. It reads no environment and no global state; the
// base URL, the HTTP client, the timeout and the clock come in Config.
//
// It imports the standard library and channels only.
package whatsapp
