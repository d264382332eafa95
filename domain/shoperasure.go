package domain

import "time"

// shopErasureEvents lists the events of the uninstall countdown and of the
// erasure of a whole shop.
func shopErasureEvents() []EventSpec {
	return []EventSpec{
		{Name: "AppReinstalled", Version: 1, New: func() Event { return &AppReinstalled{} }},
		{Name: "ShopErased", Version: 1, New: func() Event { return &ShopErased{} }},
	}
}

// Unsealed is implemented by event types that carry neither personal data
// nor data of the shop (ids, a reason, a time): the envelope stores them
// in clear, so they stay readable after the shop's key is shredded (a
// replay still folds them). An Unsealed type must not be Personal.
type Unsealed interface {
	Event
	// Unsealed reports that the event is stored without any key.
	Unsealed() bool
}

// Reasons a shop is erased.
const (
	// ShopErasedRedact: the platform's shop/redact arrived.
	ShopErasedRedact = "shop_redact"
	// ShopErasedRetention: the 30 days after app/uninstalled passed
	// without a reinstall or a shop/redact.
	ShopErasedRetention = "retention_expired"
)

// AppReinstalled: the shop installed the app again before its retention
// countdown ended, which cancels the countdown.
type AppReinstalled struct {
	ShopID        string    `json:"shop_id"`
	ReinstalledAt time.Time `json:"reinstalled_at"`
}

// EventType implements Event.
func (AppReinstalled) EventType() string { return "AppReinstalled" }

// ShopErased: every piece of the shop's data was erased for good (its
// keys shredded, its read-model rows deleted, its credentials revoked).
// It carries ids only and is stored unsealed, so it stays readable once
// the shop's key is gone.
type ShopErased struct {
	ShopID string `json:"shop_id"`
	// Reason is ShopErasedRedact or ShopErasedRetention.
	Reason string `json:"reason"`
	// RequestEventID is the id of the ShopRedactRequested event; empty
	// when the countdown ended.
	RequestEventID string    `json:"request_event_id"`
	ErasedAt       time.Time `json:"erased_at"`
}

// EventType implements Event.
func (ShopErased) EventType() string { return "ShopErased" }

// Unsealed implements Unsealed.
func (ShopErased) Unsealed() bool { return true }

// ReinstallApp decides a reinstall: only an uninstalled shop's countdown
// is cancelled; an installed shop changes nothing.
func (s *Shop) ReinstallApp(at time.Time) (*AppReinstalled, error) {
	if !s.Exists {
		return nil, NotFound("shop")
	}
	if !s.Uninstalled {
		return nil, nil
	}
	return &AppReinstalled{ShopID: s.ID, ReinstalledAt: at.UTC()}, nil
}

// ReinstallBySubscription decides whether an app subscription update of
// an uninstalled shop means the app was installed again: an ACTIVE
// subscription updated after the uninstall (a merchant approves a charge
// only from an installed app). A delayed delivery about the subscription
// as it stood before the uninstall does not cancel the countdown.
func (s *Shop) ReinstallBySubscription(status string, updatedAt time.Time) *AppReinstalled {
	if !s.Exists || !s.Uninstalled || status != "ACTIVE" || !updatedAt.After(s.UninstalledAt) {
		return nil
	}
	return &AppReinstalled{ShopID: s.ID, ReinstalledAt: updatedAt.UTC()}
}

// EraseShop decides the erasure of the shop. A shop erased already
// changes nothing. The countdown (ShopErasedRetention) erases only a shop
// still uninstalled whose retention ended at or before now: a reinstall
// that won the race is a conflict. shop/redact erases whatever the install
// state (the platform sends it 48 hours after an uninstall).
func (s *Shop) EraseShop(reason, requestEventID string, now time.Time) (*ShopErased, error) {
	if s.Erased {
		return nil, nil
	}
	if !s.Exists {
		return nil, NotFound("shop")
	}
	switch reason {
	case ShopErasedRedact:
	case ShopErasedRetention:
		if !s.Uninstalled || now.Before(s.RetentionDueAt) {
			return nil, Conflict("the shop's retention period has not ended")
		}
	default:
		return nil, Invalid("reason", "want %s or %s", ShopErasedRedact, ShopErasedRetention)
	}
	return &ShopErased{ShopID: s.ID, Reason: reason, RequestEventID: requestEventID, ErasedAt: now.UTC()}, nil
}
