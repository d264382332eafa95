package domain

import (
	"strconv"
	"strings"
	"time"
)

// attributionEvents lists the attribution event types: a shop's
// attribution settings.
func attributionEvents() []EventSpec {
	return []EventSpec{
		{Name: "AttributionSettingsChanged", Version: 1, New: func() Event { return &AttributionSettingsChanged{} }},
	}
}

// Bounds and default of a shop's attribution lookback window (issue 6: 30
// days by default, configurable per shop).
const (
	DefaultLookback = 30 * 24 * time.Hour
	MinLookback     = time.Hour
	MaxLookback     = 365 * 24 * time.Hour
)

// AttributionSettingsStream is the stream of a shop's attribution settings.
func AttributionSettingsStream(shopID string) string { return "attribution-settings-" + shopID }

// AttributionSettingsChanged: a shop's attribution settings changed. The
// attribution read model uses them for the credits it computes afterwards.
type AttributionSettingsChanged struct {
	ShopID string `json:"shop_id"`
	// LookbackSeconds is the lookback window in whole seconds.
	LookbackSeconds int64     `json:"lookback_seconds"`
	ChangedAt       time.Time `json:"changed_at"`
}

// EventType implements Event.
func (AttributionSettingsChanged) EventType() string { return "AttributionSettingsChanged" }

// Lookback is the window as a duration.
func (e AttributionSettingsChanged) Lookback() time.Duration {
	return time.Duration(e.LookbackSeconds) * time.Second
}

// AttributionSettings is the aggregate of a shop's attribution settings.
type AttributionSettings struct {
	// Lookback is the current window; zero until a change was recorded
	// (the default applies).
	Lookback time.Duration
}

// Apply folds an event.
func (s *AttributionSettings) Apply(e Event) {
	if ev, ok := e.(*AttributionSettingsChanged); ok {
		s.Lookback = ev.Lookback()
	}
}

// SetLookback decides a change of the lookback window: nil when it is
// already the window in force (the default counts), a validation error
// (field "lookback") outside MinLookback..MaxLookback or not whole seconds.
func (s *AttributionSettings) SetLookback(shopID string, d time.Duration, now time.Time) (*AttributionSettingsChanged, error) {
	if d < MinLookback || d > MaxLookback || d%time.Second != 0 {
		return nil, Invalid("lookback", "lookback must be whole seconds from 1 hour to 365 days")
	}
	current := s.Lookback
	if current == 0 {
		current = DefaultLookback
	}
	if d == current {
		return nil, nil
	}
	return &AttributionSettingsChanged{ShopID: shopID, LookbackSeconds: int64(d / time.Second), ChangedAt: now.UTC()}, nil
}

// ParseLookback reads a lookback window: a whole number of days ("14d"),
// hours ("36h") or minutes ("90m"), or a Go duration ("1h30m"). It only
// parses: SetLookback checks the bounds. Errors name the field "lookback".
func ParseLookback(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	bad := Invalid("lookback", "lookback must be a number of days (14d), hours (36h) or minutes (90m)")
	if len(s) < 2 || len(s) > 32 {
		return 0, bad
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseInt(n, 10, 64)
		if err != nil || days < 0 || days > 100_000 || n[0] == '+' {
			return 0, bad
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, bad
	}
	return d, nil
}

// FormatLookback writes a window as ParseLookback reads it: whole days as
// "14d", else Go's duration format ("36h0m0s").
func FormatLookback(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// CheckoutTokenID derives the id under which a checkout's token is kept:
// the pixel reports the token of the checkout a visitor started, the
// checkout webhook carries it with the customer; the id links the two
// without keeping the token (it opens the checkout).
func CheckoutTokenID(shopID, token string) string {
	return IDFromExternal("ctk_", "checkout-token", shopID, token)
}
