package commands

import (
	"context"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// ConnectMarketplace connects a seller account of a marketplace to a shop,
// with the secret the marketplace signs its webhooks with.
type ConnectMarketplace struct {
	ShopID      string
	Marketplace string
	AccountID   string
	Secret      string
	AppKey      string
}

// MarketplaceConnection is the result of ConnectMarketplace.
type MarketplaceConnection struct {
	Result
	// AccountID is the account id as recorded (trimmed).
	AccountID string
	// Rotated is true when the shop held the connection already and only
	// its secret changed.
	Rotated bool
}

// ConnectMarketplace runs the command. The connection's stream is claimed
// with "no stream" by its first event, so one (marketplace, account) pair
// belongs to one shop even when two connect it at once; the shop holding it
// may connect it again to rotate the secret.
func (h *Handler) ConnectMarketplace(ctx context.Context, cmd ConnectMarketplace, meta Meta) (MarketplaceConnection, error) {
	creds, err := domain.NewMarketplaceCredentials(cmd.Marketplace, cmd.AccountID, cmd.Secret, cmd.AppKey)
	if err != nil {
		return MarketplaceConnection{}, err
	}
	var shop domain.Shop
	if _, _, err := h.load(ctx, domain.ShopStream(cmd.ShopID), &shop); err != nil {
		return MarketplaceConnection{}, err
	}
	id := domain.MarketplaceConnectionID(creds.Marketplace, creds.AccountID)
	rotated := false
	res, err := execute(ctx, h, cmd.ShopID, domain.MarketplaceConnectionStream(id),
		func() *domain.MarketplaceConnection { return &domain.MarketplaceConnection{} },
		func(c *domain.MarketplaceConnection) (decision, error) {
			ev, err := c.Connect(&shop, creds, h.now())
			if err != nil {
				return decision{}, err
			}
			_, rotated = ev.(*domain.MarketplaceSecretRotated)
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = id
	return MarketplaceConnection{Result: res, AccountID: creds.AccountID, Rotated: rotated}, err
}

// RecordMarketplaceOrder records what a marketplace delivery says about an
// order of a shop.
type RecordMarketplaceOrder struct {
	ShopID string
	Update domain.MarketplaceOrderUpdate
	// EventID is derived from the delivery id: a repeat appends nothing.
	EventID uuid.UUID
}

// RecordMarketplaceOrder runs the command: one event in the order's stream.
func (h *Handler) RecordMarketplaceOrder(ctx context.Context, cmd RecordMarketplaceOrder, meta Meta) (Result, error) {
	probe, err := domain.NewMarketplaceOrderRecorded(cmd.ShopID, cmd.Update, h.now())
	if err != nil {
		return Result{}, err
	}
	res, err := execute(ctx, h, cmd.ShopID, domain.MarketplaceOrderStream(probe.OrderID),
		func() *domain.MarketplaceOrder { return &domain.MarketplaceOrder{} },
		func(o *domain.MarketplaceOrder) (decision, error) {
			ev, err := o.Record(cmd.ShopID, cmd.Update, h.now())
			if err != nil {
				return decision{}, err
			}
			return decision{events: []domain.Event{ev}, ids: []uuid.UUID{cmd.EventID}}, nil
		}, meta)
	res.ID = probe.OrderID
	return res, err
}

// RecordMarketplaceNotification records a marketplace notification that is
// not about an order.
type RecordMarketplaceNotification struct {
	ShopID string
	Notice domain.MarketplaceNotice
	// EventID is derived from the delivery id and names the stream: a
	// repeat appends nothing.
	EventID uuid.UUID
}

// RecordMarketplaceNotification runs the command: the notification's own
// stream, appended with "no stream" (a repeat of the same event id is
// answered with the earlier result by the log).
func (h *Handler) RecordMarketplaceNotification(ctx context.Context, cmd RecordMarketplaceNotification, meta Meta) (Result, error) {
	now := h.now()
	ev, err := domain.NewMarketplaceNotificationReceived(cmd.ShopID, cmd.Notice, now)
	if err != nil {
		return Result{}, err
	}
	return h.appendOne(ctx, cmd.ShopID, domain.MarketplaceNotificationStream(cmd.EventID.String()), eventlog.NoStream(),
		cmd.EventID, ev, now, meta)
}
