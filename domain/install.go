package domain

import (
	"strings"
	"time"
)

// installEvents lists the events of installing the app through the
// platform's OAuth flow and of the stored platform session.
func installEvents() []EventSpec {
	return []EventSpec{
		{Name: "AppInstalled", Version: 1, New: func() Event { return &AppInstalled{} }},
		{Name: "PlatformSessionStored", Version: 1, New: func() Event { return &PlatformSessionStored{} }},
		{Name: "PlatformWebhooksRegistered", Version: 1, New: func() Event { return &PlatformWebhooksRegistered{} }},
	}
}

// PlatformSessionStream is the stream of a shop's platform session (the
// offline token and its refreshes): apart from the shop's stream, so an
// hourly refresh never races the shop's own commands.
func PlatformSessionStream(shopID string) string { return "platformsession-" + shopID }

// AppInstalled: the merchant approved the app on the platform (the OAuth
// callback), with the scopes the platform granted, collapsed as the
// platform stores them. It is recorded at every approval: the first
// install, a reinstall, a re-consent.
type AppInstalled struct {
	ShopID string `json:"shop_id"`
	Domain string `json:"domain"`
	// Granted is the token response's scope list; Declared is what the app
	// requested then.
	Granted  []string `json:"granted"`
	Declared []string `json:"declared"`
	// WebhookSecret is what the platform signs the shop's webhooks with
	// from now on: the app's client secret.
	WebhookSecret string    `json:"webhook_secret"`
	InstalledAt   time.Time `json:"installed_at"`
}

// Secrets implements SecretHolder.
func (e *AppInstalled) Secrets() []*string { return []*string{&e.WebhookSecret} }

// EventType implements Event.
func (AppInstalled) EventType() string { return "AppInstalled" }

// Session sources: why a PlatformSessionStored was recorded.
const (
	SessionFromInstall = "install"
	SessionFromRefresh = "refresh"
)

// PlatformSessionStored: the shop's offline access token (and, for an
// expiring one, its refresh token) as the platform issued it. The log
// holds it sealed with the shop's key like every event of the shop, the
// read model sealed again per column; erasing the shop shreds both.
type PlatformSessionStored struct {
	ShopID       string `json:"shop_id"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	// Scopes is the token's scope list.
	Scopes []string `json:"scopes"`
	// ExpiresAt and RefreshExpiresAt are zero for a token that does not
	// expire.
	ExpiresAt        time.Time `json:"expires_at,omitzero"`
	RefreshExpiresAt time.Time `json:"refresh_expires_at,omitzero"`
	Source           string    `json:"source"`
	StoredAt         time.Time `json:"stored_at"`
}

// EventType implements Event.
func (PlatformSessionStored) EventType() string { return "PlatformSessionStored" }

// Secrets implements SecretHolder.
func (e *PlatformSessionStored) Secrets() []*string {
	return []*string{&e.AccessToken, &e.RefreshToken}
}

// PlatformSession is the aggregate of a shop's session stream.
type PlatformSession struct {
	Exists       bool
	AccessToken  string
	RefreshToken string
	ExpiresAt    time.Time
	Scopes       []string
}

// Apply folds an event into the session.
func (s *PlatformSession) Apply(e Event) {
	if ev, ok := e.(*PlatformSessionStored); ok {
		s.Exists, s.AccessToken, s.RefreshToken, s.ExpiresAt, s.Scopes = true, ev.AccessToken, ev.RefreshToken, ev.ExpiresAt, ev.Scopes
	}
}

// PlatformWebhooksStream is the stream of a shop's webhook registrations
// on the platform.
func PlatformWebhooksStream(shopID string) string { return "platformwebhooks-" + shopID }

// PlatformWebhooksRegistered: the app's webhook subscriptions were
// registered on the platform for a grant (its implied set): Topics at
// Address, Withheld for want of a scope (registered once a scopes update
// grants it).
type PlatformWebhooksRegistered struct {
	ShopID       string    `json:"shop_id"`
	Grant        []string  `json:"grant"`
	Topics       []string  `json:"topics"`
	Withheld     []string  `json:"withheld,omitempty"`
	Address      string    `json:"address"`
	RegisteredAt time.Time `json:"registered_at"`
}

// EventType implements Event.
func (PlatformWebhooksRegistered) EventType() string { return "PlatformWebhooksRegistered" }

// GrantKey is the implied set of a grant as one comparable string.
func GrantKey(granted []string) string { return strings.Join(ImpliedPlatformScopes(granted), ",") }
