package domain

import (
	"slices"
	"strings"
	"time"
)

// Anomalies (issue 18): something a merchant, or the operator, must hear
// about, with a severity (P1 now, P2 soon, P3 for information), a kind, the
// resources it concerns and a dedupe key. One anomaly is open per dedupe
// key at a time: raising it again while it is open records nothing,
// however often its trigger repeats; resolving it (the condition cleared)
// closes it, and a later trigger opens a new one. The stream of a dedupe
// key (AnomalyStream) is where that is decided. An operator anomaly has no
// shop (ShopID "": the platform's tenant).

// PrefixAnomaly is the id prefix of an anomaly.
const PrefixAnomaly = "anm_"

// Severities of an anomaly.
const (
	SeverityP1 = "P1"
	SeverityP2 = "P2"
	SeverityP3 = "P3"
)

// Severities lists them, most urgent first.
func Severities() []string { return []string{SeverityP1, SeverityP2, SeverityP3} }

// Anomaly kinds.
const (
	AnomalyTemplatePaused       = "template_paused"
	AnomalyTemplateRejected     = "template_rejected"
	AnomalyNumberQualityYellow  = "number_quality_yellow"
	AnomalyNumberQualityRed     = "number_quality_red"
	AnomalyWebhookFailing       = "webhook_subscription_failing"
	AnomalyWebhookDisabled      = "webhook_subscription_disabled"
	AnomalyExportFailing        = "data_request_export_failing"
	AnomalyAICreditsLow         = "ai_credits_low"
	AnomalyAICreditsExhausted   = "ai_credits_exhausted"
	AnomalyAuthBruteForce       = "auth_brute_force"
	AnomalyConversationEscalate = "conversation_escalated"
	AnomalyPlatformReconsent    = "platform_reconsent_required"
)

// AnomalyKinds lists the kinds.
func AnomalyKinds() []string {
	return []string{AnomalyTemplatePaused, AnomalyTemplateRejected, AnomalyNumberQualityYellow, AnomalyNumberQualityRed,
		AnomalyWebhookFailing, AnomalyWebhookDisabled, AnomalyExportFailing, AnomalyAICreditsLow, AnomalyAICreditsExhausted,
		AnomalyAuthBruteForce, AnomalyConversationEscalate, AnomalyPlatformReconsent}
}

// Anomaly limits.
const (
	maxAnomalyTitle     = 200
	maxAnomalySummary   = 2000
	maxAnomalyResources = 20
	maxAnomalyDedupeKey = 256
)

// AnomalyResource names a resource an anomaly concerns (type "template",
// "phone_number", "campaign", "webhook_subscription", "data_request",
// "conversation", "ip_address"…) by its id.
type AnomalyResource struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// AnomalyStream is the stream of one dedupe key of a shop ("" for the
// operator's): the key hashed, so that it may hold any characters.
func AnomalyStream(shopID, dedupeKey string) string {
	return "anomaly-" + IDFromExternal("", "anomaly-stream", shopID, dedupeKey)
}

func anomalyEvents() []EventSpec {
	return []EventSpec{
		{Name: "AnomalyRaised", Version: 1, New: func() Event { return &AnomalyRaised{} }},
		{Name: "AnomalyResolved", Version: 1, New: func() Event { return &AnomalyResolved{} }},
	}
}

// AnomalyRaised: an anomaly opened. Cause is the id of the event (or the
// description of the condition) that raised it. Title and Summary are
// written for the merchant and carry no personal data.
type AnomalyRaised struct {
	AnomalyID string            `json:"anomaly_id"`
	ShopID    string            `json:"shop_id,omitempty"`
	Severity  string            `json:"severity"`
	Kind      string            `json:"kind"`
	Title     string            `json:"title"`
	Summary   string            `json:"summary,omitempty"`
	Resources []AnomalyResource `json:"resources,omitempty"`
	DedupeKey string            `json:"dedupe_key"`
	Cause     string            `json:"cause"`
	// CausePosition is the log position of the triggering event (0 when
	// the cause is no event of the log).
	CausePosition uint64    `json:"cause_position,omitempty"`
	RaisedAt      time.Time `json:"raised_at"`
}

// EventType implements Event.
func (AnomalyRaised) EventType() string { return "AnomalyRaised" }

// AnomalyResolved: the condition of an open anomaly cleared (the template
// approved again, the quality back to GREEN…).
type AnomalyResolved struct {
	AnomalyID string `json:"anomaly_id"`
	ShopID    string `json:"shop_id,omitempty"`
	Kind      string `json:"kind"`
	DedupeKey string `json:"dedupe_key"`
	Cause     string `json:"cause"`
	Reason    string `json:"reason,omitempty"`
	// CausePosition is the log position of the triggering event (0 when
	// the cause is no event of the log).
	CausePosition uint64    `json:"cause_position,omitempty"`
	ResolvedAt    time.Time `json:"resolved_at"`
}

// EventType implements Event.
func (AnomalyResolved) EventType() string { return "AnomalyResolved" }

// Anomaly is the aggregate of one dedupe key: the open anomaly, if any,
// and the causes already handled (a cause redelivered records nothing).
//
// A trigger that records nothing (a raise while one is open) leaves no
// cause behind; handled again later (a reactor's batch retried, a rebuilt
// reactor) it would be decided against a newer state. So the triggers
// that are events of the log carry their position, and the key keeps the
// highest position it recorded: a reactor applies the log in order, so a
// trigger at or below it was decided already, and is ignored.
type Anomaly struct {
	Open   string // the open anomaly's id, "" when none
	Kind   string
	Causes map[string]bool
	// LastPosition is the highest CausePosition recorded.
	LastPosition uint64
}

// Apply folds an event into the aggregate.
func (a *Anomaly) Apply(e Event) {
	if a.Causes == nil {
		a.Causes = map[string]bool{}
	}
	switch ev := e.(type) {
	case *AnomalyRaised:
		a.Open, a.Kind, a.Causes[ev.Cause] = ev.AnomalyID, ev.Kind, true
		a.LastPosition = max(a.LastPosition, ev.CausePosition)
	case *AnomalyResolved:
		a.Open, a.Causes[ev.Cause] = "", true
		a.LastPosition = max(a.LastPosition, ev.CausePosition)
	}
}

// AnomalyDraft is what raising an anomaly takes.
type AnomalyDraft struct {
	ShopID, Severity, Kind, Title, Summary, DedupeKey, Cause string
	Resources                                                []AnomalyResource
	// CausePosition is the log position of the triggering event, 0 when
	// the cause is no event of the log (see Anomaly).
	CausePosition uint64
}

// Raise decides raising d: nil when an anomaly of the key is open or the
// cause was handled already. The anomaly id derives from the key and the
// cause.
func (a *Anomaly) Raise(d AnomalyDraft, now time.Time) (*AnomalyRaised, error) {
	switch {
	case !slices.Contains(Severities(), d.Severity):
		return nil, Invalid("severity", "severity is P1, P2 or P3")
	case !slices.Contains(AnomalyKinds(), d.Kind):
		return nil, Invalid("kind", "unknown anomaly kind %q", d.Kind)
	case d.DedupeKey == "" || len(d.DedupeKey) > maxAnomalyDedupeKey:
		return nil, Invalid("dedupe_key", "a dedupe key of 1 to %d bytes", maxAnomalyDedupeKey)
	case d.Cause == "" || len(d.Cause) > maxAnomalyDedupeKey:
		return nil, Invalid("cause", "a cause of 1 to %d bytes", maxAnomalyDedupeKey)
	case strings.TrimSpace(d.Title) == "" || len(d.Title) > maxAnomalyTitle:
		return nil, Invalid("title", "a title of 1 to %d bytes", maxAnomalyTitle)
	case len(d.Summary) > maxAnomalySummary:
		return nil, Invalid("summary", "a summary of at most %d bytes", maxAnomalySummary)
	case len(d.Resources) > maxAnomalyResources:
		return nil, Invalid("resources", "at most %d resources", maxAnomalyResources)
	}
	if a.Open != "" || a.Causes[d.Cause] || (d.CausePosition > 0 && d.CausePosition <= a.LastPosition) {
		return nil, nil
	}
	return &AnomalyRaised{AnomalyID: IDFromExternal(PrefixAnomaly, "anomaly", d.ShopID, d.DedupeKey+"\x00"+d.Cause),
		ShopID: d.ShopID, Severity: d.Severity, Kind: d.Kind, Title: strings.TrimSpace(d.Title), Summary: d.Summary,
		Resources: slices.Clone(d.Resources), DedupeKey: d.DedupeKey, Cause: d.Cause, CausePosition: d.CausePosition,
		RaisedAt: now.UTC()}, nil
}

// Resolve decides closing the open anomaly of the key because of cause
// (at log position pos, 0 when none): nil when none is open or the cause
// was handled already.
func (a *Anomaly) Resolve(shopID, dedupeKey, cause, reason string, pos uint64, now time.Time) *AnomalyResolved {
	if a.Open == "" || a.Causes[cause] || (pos > 0 && pos <= a.LastPosition) {
		return nil
	}
	return &AnomalyResolved{AnomalyID: a.Open, ShopID: shopID, Kind: a.Kind, DedupeKey: dedupeKey, Cause: cause, Reason: reason,
		CausePosition: pos, ResolvedAt: now.UTC()}
}
