package commands

import (
	"context"

	"github.com/cgp-platform/cgp/domain"
)

// ConfigureNotifications edits a shop's notification settings (PATCH
// /api/v1/shop, cgp shops notifications).
type ConfigureNotifications struct {
	ShopID string
	Patch  domain.NotificationSettingsPatch
}

// ConfigureNotifications runs the command against the settings' stream
// and returns the settings as they now are.
func (h *Handler) ConfigureNotifications(ctx context.Context, cmd ConfigureNotifications, meta Meta) (Result, *domain.NotificationSettingsChanged, error) {
	var changed *domain.NotificationSettingsChanged
	res, err := execute(ctx, h, cmd.ShopID, domain.NotificationSettingsStream(cmd.ShopID),
		func() *domain.NotificationSettingsAgg { return &domain.NotificationSettingsAgg{} },
		func(a *domain.NotificationSettingsAgg) (decision, error) {
			ev, err := a.Configure(cmd.ShopID, cmd.Patch, h.now())
			if err != nil {
				return decision{}, err
			}
			changed = ev
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.ShopID
	return res, changed, err
}

// MarkNotificationRead records that the merchant read a notification (of
// the anomaly AnomalyID, as the read model shows it).
type MarkNotificationRead struct {
	ShopID, NotificationID, AnomalyID string
}

// MarkNotificationRead runs the command against the notification's
// stream; the event is nil when it was read already.
func (h *Handler) MarkNotificationRead(ctx context.Context, cmd MarkNotificationRead, meta Meta) (Result, *domain.NotificationRead, error) {
	var read *domain.NotificationRead
	res, err := execute(ctx, h, cmd.ShopID, domain.NotificationStream(cmd.NotificationID),
		func() *domain.NotificationReads { return &domain.NotificationReads{} },
		func(a *domain.NotificationReads) (decision, error) {
			ev := a.MarkRead(cmd.ShopID, cmd.NotificationID, cmd.AnomalyID, h.now())
			if ev == nil {
				return decision{}, nil
			}
			read = ev
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.NotificationID
	return res, read, err
}

// RecordNotificationsSent records a notification message that went out
// (the notifier, once per delivery id).
type RecordNotificationsSent struct {
	Sent domain.NotificationsSent
}

// RecordNotificationsSent appends the record on the delivery's own stream
// ("no stream": a delivery is recorded once).
func (h *Handler) RecordNotificationsSent(ctx context.Context, cmd RecordNotificationsSent, meta Meta) (Result, error) {
	ev := cmd.Sent
	return execute(ctx, h, ev.ShopID, "notificationdelivery-"+ev.DeliveryID,
		func() *sentOnce { return &sentOnce{} },
		func(a *sentOnce) (decision, error) {
			if a.done {
				return decision{}, nil
			}
			return decision{events: []domain.Event{&ev}}, nil
		}, meta)
}

// sentOnce is the aggregate of a delivery's stream: recorded or not.
type sentOnce struct{ done bool }

func (a *sentOnce) Apply(domain.Event) { a.done = true }
