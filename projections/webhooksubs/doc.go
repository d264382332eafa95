// Package webhooksubs is the read model of the shops' outbound webhook
// subscriptions: its projector (stable name "webhook_subscriptions") folds
// the subscription events of domain/webhooks.go into one table, and
// Queries reads it for the API and the CLI. It holds no secret: a
// subscription's secret is shown once, to whoever created or rotated it;
// only when it was last rotated and until when the previous one still
// signs are kept here. Who
// receives what is the delivery side's business (package webhooks), not
// this read model's.
//
// It imports domain, envelope, projections and readmodel.
package webhooksubs
