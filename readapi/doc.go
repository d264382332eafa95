// Package readapi serves the admin API's GET endpoints from the read models
// (never from the event log), and renders resources in the specification's
// envelopes. It also holds the shared resource rendering the write handlers
// answer with.
//
// It imports domain, auth, httpapi and the projections' query types.
package readapi
