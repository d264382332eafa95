package domain

import (
	"crypto/sha256"
	"strings"
	"time"
	"unicode/utf8"
)

// CustomerIDFromExternal derives the customer id of a commerce-platform
// customer deterministically, so every delivery about the same customer
// reaches the same stream without a lookup, and no id leaks the external id.
func CustomerIDFromExternal(shopID, externalID string) string {
	return IDFromExternal(PrefixCustomer, "customer", shopID, externalID)
}

// IDFromExternal derives the id of a resource the commerce platform (or
// another source) names by its own id: prefix and 24 base62 characters of
// SHA-256 over kind, shop and external id. The same inputs always give the
// same id; the id reveals nothing of the external one.
func IDFromExternal(prefix, kind, shopID, externalID string) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + shopID + "\x00" + externalID))
	var b strings.Builder
	b.Grow(len(prefix) + 24)
	b.WriteString(prefix)
	for i := 0; i < 24; i++ {
		b.WriteByte(base62[int(sum[i])%62])
	}
	return b.String()
}

// Address is a postal address (personal data).
type Address struct {
	Address1 string `json:"address1,omitempty"`
	Address2 string `json:"address2,omitempty"`
	City     string `json:"city,omitempty"`
	Province string `json:"province,omitempty"`
	Country  string `json:"country,omitempty"`
	Zip      string `json:"zip,omitempty"`
}

// CustomerProfile is the snapshot of a customer the commerce platform sends.
// Email, FirstName, LastName, Phone, Note and Address are personal data.
type CustomerProfile struct {
	ExternalID       string   `json:"external_id"`
	Email            *string  `json:"email"`
	FirstName        *string  `json:"first_name"`
	LastName         *string  `json:"last_name"`
	Phone            *string  `json:"phone"`
	Note             *string  `json:"note"`
	Address          *Address `json:"address"`
	AcceptsMarketing bool     `json:"accepts_marketing"`
	// EmailConsent and SMSConsent are the platform's marketing consent
	// states (email_marketing_consent.state, sms_marketing_consent.state:
	// subscribed, not_subscribed, unsubscribed, pending, redacted,
	// invalid; PlatformConsentState), "" when the payload carried none;
	// EmailConsentAt and SMSConsentAt their consent_updated_at (zero when
	// absent). Events recorded before these fields have none of them.
	EmailConsent    string    `json:"email_consent,omitempty"`
	EmailConsentAt  time.Time `json:"email_consent_at,omitzero"`
	SMSConsent      string    `json:"sms_consent,omitempty"`
	SMSConsentAt    time.Time `json:"sms_consent_at,omitzero"`
	State           string    `json:"state,omitempty"`
	Currency        string    `json:"currency,omitempty"`
	OrdersCount     int       `json:"orders_count"`
	TotalSpent      Amount    `json:"total_spent"`
	PlatformTags    []string  `json:"platform_tags,omitempty"`
	PlatformCreated time.Time `json:"platform_created_at"`
	PlatformUpdated time.Time `json:"platform_updated_at"`
}

var customerPersonalFields = []string{"email", "first_name", "last_name", "phone", "note", "address"}

// CustomerCreated: a customer profile appeared (customers/create).
type CustomerCreated struct {
	CustomerID string `json:"customer_id"`
	ShopID     string `json:"shop_id"`
	CustomerProfile
}

// EventType implements Event.
func (CustomerCreated) EventType() string { return "CustomerCreated" }

// Subject implements Personal.
func (e CustomerCreated) Subject() string { return e.CustomerID }

// PersonalFields implements Personal.
func (CustomerCreated) PersonalFields() []string { return customerPersonalFields }

// CustomerUpdated: the platform sent a new snapshot (customers/update). A
// snapshot older (by the platform's updated_at) than the one already
// applied, since deliveries arrive out of order, is kept with Stale set and
// changes no read model, as orders, products, carts and checkouts do.
type CustomerUpdated struct {
	CustomerID string `json:"customer_id"`
	ShopID     string `json:"shop_id"`
	Stale      bool   `json:"stale,omitempty"`
	CustomerProfile
}

// EventType implements Event.
func (CustomerUpdated) EventType() string { return "CustomerUpdated" }

// Subject implements Personal.
func (e CustomerUpdated) Subject() string { return e.CustomerID }

// PersonalFields implements Personal.
func (CustomerUpdated) PersonalFields() []string { return customerPersonalFields }

// CustomerTagsSet: the merchant's tags of a customer were replaced through
// the admin API.
type CustomerTagsSet struct {
	CustomerID string   `json:"customer_id"`
	ShopID     string   `json:"shop_id"`
	Tags       []string `json:"tags"`
}

// EventType implements Event.
func (CustomerTagsSet) EventType() string { return "CustomerTagsSet" }

// Customer is the customer aggregate: only what decisions need.
type Customer struct {
	ID     string
	ShopID string
	Exists bool
	Tags   []string
	// Profile is the freshness of the platform profile applied last.
	Profile Snapshot
}

// Apply folds an event into the customer.
func (c *Customer) Apply(e Event) {
	switch ev := e.(type) {
	case *CustomerCreated:
		c.ID, c.ShopID, c.Exists = ev.CustomerID, ev.ShopID, true
		if c.Tags == nil {
			c.Tags = ev.PlatformTags
		}
		c.Profile.Advance(ev.PlatformUpdated)
	case *CustomerUpdated:
		if ev.Stale {
			return
		}
		c.ID, c.ShopID, c.Exists = ev.CustomerID, ev.ShopID, true
		c.Profile.Advance(ev.PlatformUpdated)
	case *CustomerTagsSet:
		c.Tags = ev.Tags
	}
}

// RecordProfile decides what a platform snapshot of the customer means: a
// creation for a customer not seen yet (whatever the topic said, since
// deliveries can arrive out of order), an update otherwise, stale when its
// updated_at is older than the profile applied last.
func (c *Customer) RecordProfile(shopID, customerID string, p CustomerProfile) Event {
	if !c.Exists {
		return &CustomerCreated{CustomerID: customerID, ShopID: shopID, CustomerProfile: p}
	}
	return &CustomerUpdated{CustomerID: customerID, ShopID: shopID, Stale: c.Profile.IsStale(p.PlatformUpdated), CustomerProfile: p}
}

// Tag limits.
const (
	MaxTags      = 250
	MaxTagLength = 255
)

// SetTags decides a replacement of the customer's tags. Tags are trimmed,
// de-duplicated (first occurrence kept) and must be 1 to 255 characters.
func (c *Customer) SetTags(tags []string) (*CustomerTagsSet, error) {
	if !c.Exists {
		return nil, NotFound("customer")
	}
	clean, err := NormalizeTags(tags)
	if err != nil {
		return nil, err
	}
	return &CustomerTagsSet{CustomerID: c.ID, ShopID: c.ShopID, Tags: clean}, nil
}

// NormalizeTags validates and normalises a tag list.
func NormalizeTags(tags []string) ([]string, error) {
	if tags == nil {
		return nil, Invalid("tags", "tags is required")
	}
	if len(tags) > MaxTags {
		return nil, Invalid("tags", "at most %d tags", MaxTags)
	}
	out := make([]string, 0, len(tags))
	seen := make(map[string]bool, len(tags))
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || utf8.RuneCountInString(t) > MaxTagLength || !utf8.ValidString(t) {
			return nil, Invalid("tags", "each tag must be 1 to %d characters", MaxTagLength)
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// SplitPlatformTags splits the commerce platform's comma-separated tags.
func SplitPlatformTags(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Lifecycle stages.
const (
	StageProspect = "prospect"
	StageNew      = "new"
	StageActive   = "active"
	StageLoyal    = "loyal"
	StageAtRisk   = "at_risk"
	StageChurned  = "churned"
)

// LifecycleStages lists the stages in order.
func LifecycleStages() []string {
	return []string{StageProspect, StageNew, StageActive, StageLoyal, StageAtRisk, StageChurned}
}

// Lifecycle thresholds (documented in docs/decisions.md).
const (
	LoyalMinOrders = 4
	AtRiskAfter    = 90 * 24 * time.Hour
	ChurnedAfter   = 180 * 24 * time.Hour
)

// LifecycleStage computes a customer's stage at now from its order count
// and last order time (zero when unknown):
//   - prospect: no order;
//   - churned: last order more than 180 days ago;
//   - at_risk: last order 90 to 180 days ago;
//   - otherwise new (1 order), active (2 to 3), loyal (4 or more).
//
// An unknown last-order time counts as recent.
func LifecycleStage(orders int, lastOrder, now time.Time) string {
	if orders <= 0 {
		return StageProspect
	}
	if !lastOrder.IsZero() {
		age := now.Sub(lastOrder)
		if age > ChurnedAfter {
			return StageChurned
		}
		if age > AtRiskAfter {
			return StageAtRisk
		}
	}
	switch {
	case orders >= LoyalMinOrders:
		return StageLoyal
	case orders == 1:
		return StageNew
	default:
		return StageActive
	}
}
