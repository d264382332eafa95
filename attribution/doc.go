// Package attribution is the pure computation of marketing attribution:
// touchpoints taken from the events that carry a visit's landing page and
// referrer (the storefront pixel's page views, checkouts, orders' landing
// site), their channel, source and campaign (Classify), sessions of a
// visitor (Sessionize), and the credit each touchpoint earns for an order
// under six models (Attribute): first touch, last touch, last non-direct
// touch, linear, time decay and position based.
//
// Money is split with exact integer arithmetic on domain.Amount (largest
// remainder), so the credited amounts of a model always sum to the order's
// revenue to the ten-thousandth. Every result is deterministic: it does not
// depend on the order of the input touchpoints, the clock or a random
// source.
//
// The rules (channel table, sessions, models, windows) are documented in
// docs/attribution.md and beside the code. The package imports the standard
// library and domain only: no I/O, no logging, no clock reads. Projections
// build touchpoints from events and store the results; the API reads those.
package attribution
