// Package payload decodes the JSON bodies of inbound webhooks strictly and
// the same way for every receiver: exactly one JSON value (trailing data
// is refused), numbers kept as json.Number so 64-bit ids and money keep
// their digits, and a failure reported as a validation *domain.Error, so
// the shared delivery pipeline records the delivery as unprocessable.
//
// Text is the value platforms send as a JSON string in one payload and a
// number in another (ids, codes, money amounts), kept as text.
package payload
