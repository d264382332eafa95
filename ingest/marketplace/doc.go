// Package marketplace receives marketplaces' webhooks at
// POST /webhooks/marketplaces/{marketplace}. Each marketplace has a
// Contract: where a delivery names the seller account, which headers carry
// the signature (and the timestamp and delivery id, if any), which bytes are
// signed, how the signature is encoded and how old a delivery may be. The
// contracts are etsy (Standard Webhooks), tiktok_shop (TikTok Shop's
// Authorization header) and generic (X-Marketplace-* headers) for
// marketplaces without a contract of their own.
//
// A delivery is verified over the raw bytes in constant time against the
// secret of the connection its seller account has (see the read model in
// projections/marketplaces), then parsed into an order update or a
// notification and handed to the shared delivery pipeline of package
// ingest, with an event id derived from the contract's delivery id so a
// repeat appends nothing. Buyer data in payloads is never read.
//
// It imports domain, eventlog, commands, httpapi and ingest.
package marketplace
