// Package sms is the outbound client of an SMS provider, written against
// one generic HTTP contract rather than one vendor's API: the delivery
// callbacks the provider sends back arrive at
// POST /webhooks/providers/{provider}?token=cpt_… in a shape the service
// defined itself (ingest/providers), so the sending side is defined the
// same way and a provider (or a thin bridge in front of one) is plugged
// in by pointing the base URL and the API key at it.
//
// The contract:
//
//	POST {base}/v1/messages
//	Authorization: Bearer <api key>
//	Content-Type: application/json
//
//	{"to": "+16505551234",          E.164, with its +
//	 "from": "Boutique",            sender id: E.164 or 1 to 11 letters/digits
//	 "text": "…",                   UTF-8, at most MaxSegments segments
//	 "callback_url": "https://…",   optional: where the statuses go
//	 "client_reference": "msg_…"}   optional: the service's message id
//
//	201 {"message_id": "…", "status": "queued"}
//	4xx/5xx {"error": {"code": "invalid_number", "message": "…"}}
//	429 (and 503) may carry Retry-After (seconds or an HTTP-date)
//
// and the provider later posts {"statuses":[{"message_id","status",
// "timestamp","error_code"}]} to callback_url, message_id being the one
// the 201 answered.
//
// Every failure is a *channels.SendError. Retryable: 408, 429, 5xx, a
// timeout, a connection that failed; not retryable: any other 4xx, an
// invalid request (refused before any request, Code invalid_request with
// a *FieldError cause naming the field, which the HTTP edge maps to 422),
// and a 2xx without a message id (the message may have gone out). Code is
// the provider's error code when it is a safe token ([a-z0-9_.], at most
// 64 bytes), else a channels.Code… word chosen by the status. Nothing it
// returns holds the API key, the recipient, the text or the provider's
// free text.
//
// It does not retry, queue or record anything: the sending path does. It
// reads no environment and no global state; the base URL, the key, the
// sender id, the HTTP client, the timeout and the clock come in Config.
//
// It imports the standard library and channels only.
package sms
