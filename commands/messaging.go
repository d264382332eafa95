package commands

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// Messaging commands: connecting a WhatsApp business account or a
// messaging provider (decisions on an aggregate), and recording what the
// platform and providers report (facts: messages, statuses, templates,
// number quality, alerts, reviews).
//
// A reported fact gets an event id derived from its content (the message
// id, the message id and status, the template id, event and time, …), in a
// stream that is a function of the same content, so a repeated or
// concurrent delivery of the same fact appends nothing.

// ConnectWhatsApp connects a WhatsApp business account to a shop.
type ConnectWhatsApp struct {
	ShopID            string
	BusinessAccountID string
	PhoneNumberID     string
	AppSecret         string
	VerifyToken       string
	// AccessToken is the business account's Cloud API token messages are
	// sent with; optional (empty: the account only receives, or, connecting
	// again, keeps its token).
	AccessToken string
}

// ConnectedWhatsApp is the result of ConnectWhatsApp.
type ConnectedWhatsApp struct {
	Result
	// Rotated is true when the shop had connected the account before and
	// its credentials were replaced.
	Rotated bool
}

// ConnectWhatsApp runs the command. The account's stream is appended with
// "no stream" the first time, which claims the account: two shops racing
// for it get one success and one conflict.
func (h *Handler) ConnectWhatsApp(ctx context.Context, cmd ConnectWhatsApp, meta Meta) (ConnectedWhatsApp, error) {
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(cmd.ShopID), &shop); err != nil {
		return ConnectedWhatsApp{}, err
	}
	if !domain.ValidMetaID(cmd.BusinessAccountID) {
		return ConnectedWhatsApp{}, domain.Invalid("business_account_id", "business account id must be 1 to 32 digits")
	}
	var rotated bool
	in := domain.WhatsAppConnection{BusinessAccountID: cmd.BusinessAccountID, PhoneNumberID: cmd.PhoneNumberID,
		AppSecret: cmd.AppSecret, VerifyToken: cmd.VerifyToken, AccessToken: cmd.AccessToken}
	res, err := execute(ctx, h, shop.ID, domain.WhatsAppAccountStream(cmd.BusinessAccountID),
		func() *domain.WhatsAppAccount { return &domain.WhatsAppAccount{} },
		func(acc *domain.WhatsAppAccount) (decision, error) {
			ev, err := domain.ConnectWhatsApp(&shop, acc, in, h.now())
			if err != nil {
				return decision{}, err
			}
			_, rotated = ev.(*domain.WhatsAppAccountCredentialsRotated)
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.BusinessAccountID
	return ConnectedWhatsApp{Result: res, Rotated: rotated}, err
}

// ConnectMessagingProvider connects a messaging provider that posts
// delivery callbacks with a shared token, minting the token.
type ConnectMessagingProvider struct {
	ShopID   string
	Provider string
}

// ConnectedProvider is the result of ConnectMessagingProvider: the raw
// token is returned once and never stored.
type ConnectedProvider struct {
	Result
	Token   string
	Rotated bool
}

// ConnectMessagingProvider runs the command. Connecting again mints a new
// token; the old one fails from then on.
func (h *Handler) ConnectMessagingProvider(ctx context.Context, cmd ConnectMessagingProvider, meta Meta) (ConnectedProvider, error) {
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(cmd.ShopID), &shop); err != nil {
		return ConnectedProvider{}, err
	}
	raw := domain.NewProviderToken()
	var rotated bool
	res, err := execute(ctx, h, shop.ID, domain.MessagingProviderStream(cmd.ShopID, cmd.Provider),
		func() *domain.MessagingProvider { return &domain.MessagingProvider{} },
		func(conn *domain.MessagingProvider) (decision, error) {
			ev, err := domain.ConnectProvider(&shop, conn, cmd.Provider, raw, h.now())
			if err != nil {
				return decision{}, err
			}
			_, rotated = ev.(*domain.MessagingProviderTokenRotated)
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.Provider
	if err != nil {
		return ConnectedProvider{}, err
	}
	return ConnectedProvider{Result: res, Token: raw, Rotated: rotated}, nil
}

// ReceiveWhatsAppMessage records a message a customer sent to the shop,
// queued by the shop's current plan (read from its stream, so a plan
// change applies to the next message at once).
type ReceiveWhatsAppMessage struct {
	ShopID  string
	Message domain.InboundMessage
}

// ReceiveWhatsAppMessage runs the command.
func (h *Handler) ReceiveWhatsAppMessage(ctx context.Context, cmd ReceiveWhatsAppMessage, meta Meta) (Result, error) {
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(cmd.ShopID), &shop); err != nil {
		return Result{}, err
	}
	ev, err := domain.ReceiveMessage(&shop, cmd.Message, h.now())
	if err != nil {
		return Result{}, err
	}
	id := eventlog.DeterministicID("whatsapp-message", cmd.ShopID, ev.MessageID)
	return h.recordFact(ctx, cmd.ShopID, domain.MessageStream(cmd.ShopID, ev.MessageID), id, ev, meta)
}

// RecordMessageStatus records a delivery status of a message, whoever
// reported it. The event id depends on the shop, message id and status
// only: the same status of the same message reported twice (or by the
// platform and a provider) is recorded once.
type RecordMessageStatus struct {
	ShopID string
	Status domain.MessageStatus
}

// RecordMessageStatus runs the command.
func (h *Handler) RecordMessageStatus(ctx context.Context, cmd RecordMessageStatus, meta Meta) (Result, error) {
	ev, err := domain.ReportMessageStatus(cmd.ShopID, cmd.Status, h.now())
	if err != nil {
		return Result{}, err
	}
	id := eventlog.DeterministicID("message-status", cmd.ShopID, ev.MessageID, ev.Status)
	return h.recordFact(ctx, cmd.ShopID, domain.MessageStream(cmd.ShopID, ev.MessageID), id, ev, meta)
}

// RecordTemplateStatus records a message template's status event.
type RecordTemplateStatus struct {
	ShopID string
	Status domain.TemplateStatus
}

// RecordTemplateStatus runs the command.
func (h *Handler) RecordTemplateStatus(ctx context.Context, cmd RecordTemplateStatus, meta Meta) (Result, error) {
	ev, err := domain.UpdateTemplateStatus(cmd.ShopID, cmd.Status, h.now())
	if err != nil {
		return Result{}, err
	}
	id := eventlog.DeterministicID("whatsapp-template", cmd.ShopID, ev.TemplateID, ev.Event, epochText(cmd.Status.At), ev.Reason)
	return h.recordFact(ctx, cmd.ShopID, domain.WhatsAppTemplateStream(cmd.ShopID, ev.TemplateID), id, ev, meta)
}

// RecordPhoneQuality records a business number's quality update.
type RecordPhoneQuality struct {
	ShopID  string
	Quality domain.PhoneQuality
}

// RecordPhoneQuality runs the command.
func (h *Handler) RecordPhoneQuality(ctx context.Context, cmd RecordPhoneQuality, meta Meta) (Result, error) {
	ev, err := domain.UpdatePhoneQuality(cmd.ShopID, cmd.Quality, h.now())
	if err != nil {
		return Result{}, err
	}
	id := eventlog.DeterministicID("whatsapp-quality", cmd.ShopID, ev.BusinessAccountID, ev.DisplayPhoneNumber,
		ev.Event, ev.CurrentLimit, ev.OldLimit, cmd.Quality.Rating, epochText(cmd.Quality.At))
	return h.recordFact(ctx, cmd.ShopID, domain.WhatsAppNumberStream(cmd.ShopID, ev.DisplayPhoneNumber), id, ev, meta)
}

// RecordAccountAlert records an alert on a business account.
type RecordAccountAlert struct {
	ShopID string
	Alert  domain.AccountAlert
}

// RecordAccountAlert runs the command.
func (h *Handler) RecordAccountAlert(ctx context.Context, cmd RecordAccountAlert, meta Meta) (Result, error) {
	ev, err := domain.ReceiveAccountAlert(cmd.ShopID, cmd.Alert, h.now())
	if err != nil {
		return Result{}, err
	}
	id := eventlog.DeterministicID("whatsapp-alert", cmd.ShopID, ev.BusinessAccountID, ev.EntityType, ev.EntityID,
		ev.AlertType, ev.Severity, ev.Status, ev.Description, epochText(cmd.Alert.At))
	return h.recordFact(ctx, cmd.ShopID, domain.WhatsAppAccountStream(ev.BusinessAccountID), id, ev, meta)
}

// RecordAccountReview records a review decision on a business account.
type RecordAccountReview struct {
	ShopID            string
	BusinessAccountID string
	Decision          string
	At                time.Time
}

// RecordAccountReview runs the command.
func (h *Handler) RecordAccountReview(ctx context.Context, cmd RecordAccountReview, meta Meta) (Result, error) {
	ev, err := domain.UpdateAccountReview(cmd.ShopID, cmd.BusinessAccountID, cmd.Decision, cmd.At, h.now())
	if err != nil {
		return Result{}, err
	}
	id := eventlog.DeterministicID("whatsapp-review", cmd.ShopID, ev.BusinessAccountID, ev.Decision, epochText(cmd.At))
	return h.recordFact(ctx, cmd.ShopID, domain.WhatsAppAccountStream(ev.BusinessAccountID), id, ev, meta)
}

// recordFact appends one reported fact whatever the stream's state: no
// aggregate has a say in what the platform reports. The deterministic id
// makes a repeat a no-op that answers the first append's result.
func (h *Handler) recordFact(ctx context.Context, shop, stream string, id uuid.UUID, ev domain.Event, meta Meta) (Result, error) {
	return h.appendOne(ctx, shop, stream, eventlog.Any(), id, ev, h.now(), meta)
}

// appendOne seals ev for shop under id, recorded at at, and appends it to
// stream at the expected revision, without loading an aggregate: for
// events whose id, not a decision, makes a repeat a no-op (the log answers
// a repeated id with the first append's result).
func (h *Handler) appendOne(ctx context.Context, shop, stream string, expected eventlog.ExpectedRevision, id uuid.UUID, ev domain.Event, at time.Time, meta Meta) (Result, error) {
	data, err := h.codec.Encode(ctx, id, shop, ev, at, meta.metadata())
	if err != nil {
		return Result{}, err
	}
	res, err := h.log.Append(ctx, stream, expected, data)
	if err != nil {
		return Result{}, fmt.Errorf("append to %s: %w", stream, err)
	}
	return Result{ID: id.String(), Position: res.Position, Revision: res.NextExpectedRevision}, nil
}

// epochText renders a time as epoch seconds for an id ("" for zero).
func epochText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.Unix(), 10)
}
