package domain

import (
	"maps"
	"strings"
	"time"
	"unicode/utf8"
)

// imageOperationEvents lists the image operations' event types (issue 19).
//
// An operation's request and its outcome are appended to its shop's credit
// ledger stream of the month it was accepted in, each together with its
// credit event in one append: ImageOperationRequested with CreditsReserved,
// ImageOperationSucceeded with CreditsConsumed, ImageOperationFailed with
// CreditsReleased. So an operation is never accepted without its credits
// set aside, never finished without them settled, and concurrent requests
// are decided against one revision of the ledger. Each attempt to run it
// is an ImageOperationStarted on the operation's own stream
// (ImageOperationStream), which keeps the contended ledger short.
func imageOperationEvents() []EventSpec {
	return []EventSpec{
		{Name: "ImageOperationRequested", Version: 1, New: func() Event { return &ImageOperationRequested{} }},
		{Name: "ImageOperationStarted", Version: 1, New: func() Event { return &ImageOperationStarted{} }},
		{Name: "ImageOperationSucceeded", Version: 1, New: func() Event { return &ImageOperationSucceeded{} }},
		{Name: "ImageOperationFailed", Version: 1, New: func() Event { return &ImageOperationFailed{} }},
	}
}

// PrefixImageOperation prefixes image operation ids.
const PrefixImageOperation = "img_"

// ImageOperationStream is the stream of an operation's attempts.
func ImageOperationStream(id string) string { return "imageop-" + id }

// Image operation statuses, as the API shows them.
const (
	ImageStatusQueued     = "queued"
	ImageStatusProcessing = "processing"
	ImageStatusSucceeded  = "succeeded"
	ImageStatusFailed     = "failed"
)

// ImageStatuses lists the statuses in their order.
func ImageStatuses() []string {
	return []string{ImageStatusQueued, ImageStatusProcessing, ImageStatusSucceeded, ImageStatusFailed}
}

// The AI credits each operation costs (DESIGN.md §7 leaves them open; the
// decision and its reasons are in docs/decisions.md).
const (
	CostBackgroundRemoval = 1
	CostUpscale2          = 1
	CostUpscale4          = 2
	CostSceneEmbedded     = 1
	CostSceneProvider     = 3
)

// ImageOperationCost is the credits an operation of kind with options
// costs; provider says whether lifestyle scenes go to the configured
// scene-generation provider (they cost more: the provider charges us).
// Options are validated before (the upscale's scale is "2" or "4").
func ImageOperationCost(kind string, options map[string]string, provider bool) int {
	switch kind {
	case CreditKindBackgroundRemoval:
		return CostBackgroundRemoval
	case CreditKindUpscale:
		if options["scale"] == "4" {
			return CostUpscale4
		}
		return CostUpscale2
	case CreditKindLifestyleScene:
		if provider {
			return CostSceneProvider
		}
		return CostSceneEmbedded
	}
	return 0
}

// ImageRef describes an image an operation read or wrote: the SHA-256 of
// its bytes (lowercase hex), their count, its format ("png", "jpeg" or
// "webp") and its dimensions.
type ImageRef struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	Format string `json:"format"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// ImageOperationRequested: an operation was accepted and its credits
// reserved (appended with CreditsReserved). KeyID is the image-API key
// that asked for it.
type ImageOperationRequested struct {
	ShopID      string            `json:"shop_id"`
	OperationID string            `json:"operation_id"`
	Kind        string            `json:"kind"`
	Options     map[string]string `json:"options"`
	Month       string            `json:"month"`
	Credits     int               `json:"credits"`
	Input       ImageRef          `json:"input"`
	KeyID       string            `json:"key_id"`
	At          time.Time         `json:"at"`
}

// EventType implements Event.
func (ImageOperationRequested) EventType() string { return "ImageOperationRequested" }

// ImageOperationStarted: a worker began attempt Attempt (from 1) with the
// engine Engine.
type ImageOperationStarted struct {
	ShopID      string    `json:"shop_id"`
	OperationID string    `json:"operation_id"`
	Attempt     int       `json:"attempt"`
	Engine      string    `json:"engine"`
	At          time.Time `json:"at"`
}

// EventType implements Event.
func (ImageOperationStarted) EventType() string { return "ImageOperationStarted" }

// ImageOperationSucceeded: the result is stored (appended with
// CreditsConsumed). Metadata says how it was made (engine.Output).
type ImageOperationSucceeded struct {
	ShopID      string            `json:"shop_id"`
	OperationID string            `json:"operation_id"`
	Kind        string            `json:"kind"`
	Month       string            `json:"month"`
	Engine      string            `json:"engine"`
	Result      ImageRef          `json:"result"`
	Metadata    map[string]string `json:"metadata"`
	RunMillis   int64             `json:"run_ms"`
	At          time.Time         `json:"at"`
}

// EventType implements Event.
func (ImageOperationSucceeded) EventType() string { return "ImageOperationSucceeded" }

// ImageOperationFailed: the operation will not produce a result (appended
// with CreditsReleased). Code is stable and machine-readable; Reason is a
// sentence without personal data or secrets.
type ImageOperationFailed struct {
	ShopID      string    `json:"shop_id"`
	OperationID string    `json:"operation_id"`
	Kind        string    `json:"kind"`
	Month       string    `json:"month"`
	Code        string    `json:"code"`
	Reason      string    `json:"reason"`
	At          time.Time `json:"at"`
}

// EventType implements Event.
func (ImageOperationFailed) EventType() string { return "ImageOperationFailed" }

// Failure codes of image operations.
const (
	ImageFailInvalidImage = "invalid_image"      // the engine refused the picture or an option
	ImageFailEngine       = "engine_error"       // the engine failed
	ImageFailProvider     = "provider_error"     // the scene provider failed or refused
	ImageFailUnavailable  = "engine_unavailable" // no engine for the kind on this server
	ImageFailAttempts     = "attempts_exhausted" // every attempt ended without an outcome (the process died)
	ImageFailInputMissing = "input_missing"      // the stored input is gone (erased or swept)
)

// RequestImageOperation decides accepting an operation on the month's
// ledger: its reservation and its request, or nil when the ledger holds the
// operation already (a repeat).
func (l *CreditLedger) RequestImageOperation(req ImageOperationRequested, budget int, now time.Time) ([]Event, error) {
	res, err := l.Reserve(req.ShopID, req.OperationID, req.Kind, req.Credits, budget, now)
	if res == nil || err != nil {
		return nil, err
	}
	req.Month = res.Month
	req.At = now.UTC()
	req.Options = maps.Clone(req.Options)
	return []Event{res, &req}, nil
}

// SucceedImageOperation decides an operation's success with its credits'
// consumption: nil on a repeat; a conflict when it failed already.
func (l *CreditLedger) SucceedImageOperation(ev ImageOperationSucceeded, now time.Time) ([]Event, error) {
	c, err := l.Consume(ev.ShopID, ev.Month, ev.OperationID, now)
	if c == nil || err != nil {
		return nil, err
	}
	ev.Kind = c.Kind
	ev.At = now.UTC()
	return []Event{&ev, c}, nil
}

// FailImageOperation decides an operation's failure with its credits'
// release: nil on a repeat; a conflict when it succeeded already.
func (l *CreditLedger) FailImageOperation(ev ImageOperationFailed, now time.Time) ([]Event, error) {
	for len(ev.Reason) > 200 || !utf8.ValidString(ev.Reason) {
		ev.Reason = strings.ToValidUTF8(ev.Reason[:min(len(ev.Reason), 200)], "")
	}
	r, err := l.Release(ev.ShopID, ev.Month, ev.OperationID, ev.Code, now)
	if r == nil || err != nil {
		return nil, err
	}
	ev.Kind = r.Kind
	ev.At = now.UTC()
	return []Event{&ev, r}, nil
}
