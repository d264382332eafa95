// Package tenancy is the read model of accounts, shops and admin tokens
// (projector "tenancy"): what authentication and the webhook receivers look
// up on every request; beside them, each shop's AI credit budget override
// and its credits per billing month (credits.go). It imports domain,
// eventlog, envelope, projections and readmodel.
package tenancy
