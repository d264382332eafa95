package shopify

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// Customer is a customers/create or customers/update payload, as far as
// routing and de-duplication need it. The profile itself is mapped by
// ingest.ParseCustomer. Email, FirstName, LastName and Phone are personal
// data.
type Customer struct {
	ID          string
	Email       string
	FirstName   string
	LastName    string
	Phone       string
	State       string // disabled, invited, enabled, declined
	Currency    string
	Tags        []string
	OrdersCount int
	TotalSpent  domain.Amount
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// rawCustomer is the customer payload as the platform sends it.
type rawCustomer struct {
	ID                    json.Number `json:"id"`
	Email                 string      `json:"email"`
	FirstName             string      `json:"first_name"`
	LastName              string      `json:"last_name"`
	Phone                 string      `json:"phone"`
	Note                  string      `json:"note"`
	State                 string      `json:"state"`
	Currency              string      `json:"currency"`
	Tags                  string      `json:"tags"`
	OrdersCount           int         `json:"orders_count"`
	TotalSpent            decimal     `json:"total_spent"`
	AcceptsMarketing      *bool       `json:"accepts_marketing"`
	EmailMarketingConsent *rawConsent `json:"email_marketing_consent"`
	SMSMarketingConsent   *rawConsent `json:"sms_marketing_consent"`
	CreatedAt             string      `json:"created_at"`
	UpdatedAt             string      `json:"updated_at"`
	DefaultAddress        *struct {
		Address1 string `json:"address1"`
		Address2 string `json:"address2"`
		City     string `json:"city"`
		Province string `json:"province"`
		Country  string `json:"country"`
		Zip      string `json:"zip"`
	} `json:"default_address"`
}

// rawConsent is an email_marketing_consent or sms_marketing_consent
// object (opt_in_level and consent_collected_from are not kept).
type rawConsent struct {
	State     string `json:"state"`
	UpdatedAt string `json:"consent_updated_at"`
}

// ParseCustomer parses a customers/create or customers/update payload. It
// rejects a payload without a customer id.
func ParseCustomer(body []byte) (Customer, error) {
	cu, _, err := parseCustomer(body)
	return cu, err
}

// ParseCustomerProfile maps a customers/create or customers/update payload
// to the profile the service keeps: empty personal fields are absent (nil),
// marketing consent comes from email_marketing_consent (or the older
// accepts_marketing), the address is the default address.
func ParseCustomerProfile(body []byte) (domain.CustomerProfile, error) {
	cu, r, err := parseCustomer(body)
	if err != nil {
		return domain.CustomerProfile{}, err
	}
	p := domain.CustomerProfile{
		ExternalID: cu.ID, Email: present(cu.Email), FirstName: present(cu.FirstName),
		LastName: present(cu.LastName), Phone: present(cu.Phone), Note: present(strings.TrimSpace(r.Note)),
		State: cu.State, Currency: cu.Currency, OrdersCount: cu.OrdersCount, TotalSpent: cu.TotalSpent,
		PlatformTags: cu.Tags, PlatformCreated: cu.CreatedAt, PlatformUpdated: cu.UpdatedAt,
	}
	var c conv
	switch {
	case r.EmailMarketingConsent != nil:
		p.EmailConsent = domain.PlatformConsentState(r.EmailMarketingConsent.State)
		p.EmailConsentAt = c.time("email_marketing_consent.consent_updated_at", r.EmailMarketingConsent.UpdatedAt)
		p.AcceptsMarketing = p.EmailConsent == domain.ConsentSubscribed
	case r.AcceptsMarketing != nil:
		// The legacy field: consent to e-mail marketing, at the
		// snapshot's time.
		p.AcceptsMarketing = *r.AcceptsMarketing
		p.EmailConsent = "not_subscribed"
		if p.AcceptsMarketing {
			p.EmailConsent = domain.ConsentSubscribed
		}
	}
	if r.SMSMarketingConsent != nil {
		p.SMSConsent = domain.PlatformConsentState(r.SMSMarketingConsent.State)
		p.SMSConsentAt = c.time("sms_marketing_consent.consent_updated_at", r.SMSMarketingConsent.UpdatedAt)
	}
	if c.err != nil {
		return domain.CustomerProfile{}, c.err
	}
	if a := r.DefaultAddress; a != nil {
		p.Address = &domain.Address{Address1: a.Address1, Address2: a.Address2, City: a.City, Province: a.Province, Country: a.Country, Zip: a.Zip}
	}
	return p, nil
}

func parseCustomer(body []byte) (Customer, rawCustomer, error) {
	var r rawCustomer
	if err := payload.Decode(body, &r); err != nil {
		return Customer{}, r, err
	}
	var c conv
	cu := Customer{
		ID:          c.id("id", r.ID),
		Email:       strings.TrimSpace(r.Email),
		FirstName:   strings.TrimSpace(r.FirstName),
		LastName:    strings.TrimSpace(r.LastName),
		Phone:       strings.TrimSpace(r.Phone),
		State:       r.State,
		Currency:    r.Currency,
		Tags:        domain.SplitPlatformTags(r.Tags),
		OrdersCount: max(r.OrdersCount, 0),
		TotalSpent:  c.amount("total_spent", r.TotalSpent),
		CreatedAt:   c.time("created_at", r.CreatedAt),
		UpdatedAt:   c.time("updated_at", r.UpdatedAt),
	}
	if c.err != nil {
		return Customer{}, r, c.err
	}
	return cu, r, nil
}

// present returns nil for an empty string, else a pointer to it.
func present(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
