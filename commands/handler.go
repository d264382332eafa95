package commands

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
)

// Handler runs commands against the event log. Its methods are the write
// side's table of contents:
//
//   - CreateAccount, CreateShop (tenancy, create_tenancy.go)
//   - IssueToken, IssueMasterToken, RotateToken, RevokeToken, ChangeShopPlan, IssuePublicKey,
//     MintImageKey, ImportImageKey (credentials, tokens.go)
//   - AllowOrigin, RemoveOrigin, RotatePublicKey, RevokePublicKey (the
//     storefront's allow-list and public keys, storefront_access.go)
//   - RecordCustomer (commerce platform customer snapshot, record_customer.go)
//   - SetCustomerTags (admin API, set_customer_tags.go)
//   - RecordOrder, RecordRefund, RecordProduct, DeleteProduct,
//     RecordInventoryLevel, RecordCart, RecordCheckout,
//     RecordSubscriptionContract, RecordBillingAttempt, RecordTheme,
//     UninstallApp, UpdateAppSubscription, RecordPrivacyRequest (the other
//     commerce topics, commerce.go), RecordScopesUpdate, RecordDelivery
//   - EraseShop, ReinstallApp (the uninstall countdown and shop erasure,
//     shoperasure.go)
//   - ConnectWhatsApp, ConnectMessagingProvider, ReceiveWhatsAppMessage,
//     RecordMessageStatus, RecordTemplateStatus, RecordPhoneQuality,
//     RecordAccountAlert, RecordAccountReview (messaging.go)
//   - ConnectMarketplace, RecordMarketplaceOrder,
//     RecordMarketplaceNotification (marketplace.go)
//   - RecordStorefrontEvent (the pixel, record_storefront_event.go)
//   - SetAttributionLookback (CLI, set_attribution_lookback.go)
//   - CreateProduct, UpdateProduct, AdjustInventory (admin API, catalog.go)
//   - RequestOrderCancellation, RequestOrderRefund, RecordOrderActionOutcome
//     (the admin API's actions on orders, taken on the platform,
//     orderactions.go)
//   - CreateAudience, CreateCampaign, LaunchCampaign (campaign.go)
//   - CreateJourney, UpdateJourney, EnrollByHand (admin API),
//     EnrollInJourney (the enrollment reactor, journey.go)
//   - PauseCampaign, ResumeCampaign, PauseJourney, ResumeJourney (admin
//     API), ApplyTemplateToCampaign, ApplyTemplateToJourney (the template
//     reactor, pause.go)
//   - RecordKeywordRankings, StartDecisionRun, CompleteDecisionRun,
//     FailDecisionRun (intelligence.go)
//   - ReplyToConversation, AssignConversation, CloseConversation,
//     QueueConversation (conversation.go)
//   - ReserveCredits, ConsumeCredits, ReleaseCredits, SetCreditBudget (the
//     AI credits ledger, credits.go)
//
// It is safe for concurrent use.
type Handler struct {
	log   eventlog.Log
	codec *envelope.Codec
	now   func() time.Time
}

// New returns a command handler. now is the clock (time.Now in production).
func New(log eventlog.Log, codec *envelope.Codec, now func() time.Time) *Handler {
	if now == nil {
		now = time.Now
	}
	return &Handler{log: log, codec: codec, now: now}
}

// Meta says who asked for a command and why; it becomes the events'
// metadata.
type Meta struct {
	RequestID string // correlation id (req_… or a delivery id)
	Actor     string // tok_…, webhook:<id>, system:<job>, cli
	Source    string // api, webhook, system, cli
}

func (m Meta) metadata() eventlog.Metadata {
	return eventlog.Metadata{CorrelationID: m.RequestID, Actor: m.Actor, Source: m.Source}
}

// Result is what a command reached.
type Result struct {
	// ID is the id of the resource the command created or changed.
	ID string
	// Position is the global position of the last event appended; read
	// models that reached it reflect the command.
	Position eventlog.Position
	// Revision is the stream revision after the command.
	Revision uint64
}

// maxAttempts bounds the retries of a command that lost a race.
const maxAttempts = 8

// aggregate folds decoded events.
type aggregate interface {
	Apply(domain.Event)
}

// load folds every event of stream into agg and returns the stream's last
// revision (exists=false for an empty stream).
func (h *Handler) load(ctx context.Context, stream string, agg aggregate) (rev uint64, exists bool, err error) {
	var from uint64
	const page = 256
	for {
		evs, err := h.log.ReadStream(ctx, stream, from, page)
		if err != nil {
			return 0, false, fmt.Errorf("read %s: %w", stream, err)
		}
		for i := range evs {
			d, err := h.codec.Decode(ctx, &evs[i])
			if errors.Is(err, envelope.ErrShopErased) {
				// The shop was erased: its sealed events are gone for
				// good; the aggregate folds what is left (ShopErased)
				// and appending anything sealed fails as not found.
				rev, exists = evs[i].Revision, true
				continue
			}
			if err != nil {
				return 0, false, fmt.Errorf("load %s: %w", stream, err)
			}
			agg.Apply(d.Event)
			rev, exists = evs[i].Revision, true
		}
		if len(evs) < page {
			return rev, exists, nil
		}
		from = evs[len(evs)-1].Revision + 1
	}
}

// decision is what a command decided: the events and their ids. A nil id
// is replaced by a random one.
type decision struct {
	events []domain.Event
	ids    []uuid.UUID
	// shop, when set, is the tenant the events are sealed for; it defaults
	// to the shop the command was given (token streams learn their shop
	// from the aggregate).
	shop string
}

// execute loads stream into a fresh aggregate (made by fresh), lets decide
// choose events, and appends them with the revision loaded, retrying the
// whole cycle when another writer got there first.
func execute[A aggregate](ctx context.Context, h *Handler, shop, stream string, fresh func() A, decide func(A) (decision, error), meta Meta) (Result, error) {
	return executeOn(ctx, h, shop, stream, false, fresh, decide, meta)
}

// executeOn is execute; with likelyNew the first attempt skips reading the
// stream and decides against an empty aggregate, appending with "no
// stream": right for a resource's first delivery (orders/create), and when
// the stream exists after all the append fails and the usual cycle runs.
func executeOn[A aggregate](ctx context.Context, h *Handler, shop, stream string, likelyNew bool, fresh func() A, decide func(A) (decision, error), meta Meta) (Result, error) {
	return executeAttempts(ctx, h, shop, stream, likelyNew, maxAttempts, fresh, decide, meta)
}

// executeAttempts is executeOn with its own bound on the attempts: a
// contended stream (a month's credit ledger) needs more.
func executeAttempts[A aggregate](ctx context.Context, h *Handler, shop, stream string, likelyNew bool, attempts int, fresh func() A, decide func(A) (decision, error), meta Meta) (Result, error) {
	for attempt := 0; ; attempt++ {
		agg := fresh()
		var rev uint64
		var exists bool
		if attempt > 0 || !likelyNew {
			var err error
			if rev, exists, err = h.load(ctx, stream, agg); err != nil {
				return Result{}, err
			}
		}
		d, err := decide(agg)
		if err != nil {
			return Result{}, err
		}
		if len(d.events) == 0 {
			return Result{Revision: rev}, nil
		}
		now := h.now()
		data := make([]eventlog.EventData, len(d.events))
		for i, ev := range d.events {
			id := uuid.Nil
			if i < len(d.ids) {
				id = d.ids[i]
			}
			if id == uuid.Nil {
				id = newEventID()
			}
			tenant := shop
			if d.shop != "" {
				tenant = d.shop
			}
			if data[i], err = h.codec.Encode(ctx, id, tenant, ev, now, meta.metadata()); err != nil {
				return Result{}, err
			}
		}
		expected := eventlog.NoStream()
		if exists {
			expected = eventlog.Exact(rev)
		}
		res, err := h.log.Append(ctx, stream, expected, data...)
		if errors.Is(err, eventlog.ErrWrongExpectedRevision) && attempt+1 < attempts {
			continue
		}
		if err != nil {
			return Result{}, fmt.Errorf("append to %s: %w", stream, err)
		}
		return Result{Position: res.Position, Revision: res.NextExpectedRevision}, nil
	}
}

// newEventID returns a fresh event id, ordered by time (UUIDv7) so that the
// log's id index grows at its end.
func newEventID() uuid.UUID {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.New()
	}
	return id
}
