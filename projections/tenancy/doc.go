// Package tenancy is the read model of accounts, shops and admin tokens
// (projector "tenancy"): what authentication and the webhook receivers look
// up on every request. It imports domain, eventlog, envelope, projections
// and readmodel.
package tenancy
