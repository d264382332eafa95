// Package shopify parses the commerce platform's webhook payloads (the
// public Shopify Admin REST webhook shapes) into typed values: one Go type
// per topic payload, holding only the fields the service reads. Ids are kept
// as decimal strings so that 64-bit ids stay exact, money is a domain.Amount
// and times are time.Time in UTC.
//
// The package is pure: no I/O, no clock, no logging. Every failure is a
// *domain.Error with code validation_failed naming the offending field, so
// the HTTP edge can map it to 400. Parse dispatches by topic name.
//
// It imports the standard library and domain only.
package shopify
