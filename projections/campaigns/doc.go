// Package campaigns is the read model of saved audiences and campaigns: its
// projector (stable name "campaigns") folds AudienceCreated,
// CampaignCreated, CampaignLaunched, CampaignPaused, CampaignResumed and
// CampaignApprovalGranted into the SQLite read-model store,
// and Queries serves the admin API's audience and campaign reads (keyset
// pages ordered by created_at, the id breaking ties).
//
// It imports domain, eventlog, envelope, projections and readmodel.
package campaigns
