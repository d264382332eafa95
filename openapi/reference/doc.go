// Package reference renders the service's API reference (GET /docs) from
// the OpenAPI document, the one source, and the landing page (GET /): a
// server-side HTML page built with html/template from embedded templates,
// with one small stylesheet and one small script served from the binary
// (no CDN, no build step). Descriptions are CommonMark rendered with
// goldmark with raw HTML left out, so a description cannot inject markup.
//
// It imports the standard library, kin-openapi (the parsed document) and
// goldmark.
package reference
