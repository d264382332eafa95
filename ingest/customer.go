package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// platformCustomer is the commerce platform's customer payload (the public
// Shopify customer webhook shape), as far as the service reads it.
type platformCustomer struct {
	ID                    json.Number `json:"id"`
	Email                 *string     `json:"email"`
	FirstName             *string     `json:"first_name"`
	LastName              *string     `json:"last_name"`
	Phone                 *string     `json:"phone"`
	Note                  *string     `json:"note"`
	State                 string      `json:"state"`
	Currency              string      `json:"currency"`
	Tags                  string      `json:"tags"`
	OrdersCount           int         `json:"orders_count"`
	TotalSpent            string      `json:"total_spent"`
	AcceptsMarketing      *bool       `json:"accepts_marketing"`
	EmailMarketingConsent *struct {
		State string `json:"state"`
	} `json:"email_marketing_consent"`
	CreatedAt      string `json:"created_at"`
	UpdatedAt      string `json:"updated_at"`
	DefaultAddress *struct {
		Address1 string `json:"address1"`
		Address2 string `json:"address2"`
		City     string `json:"city"`
		Province string `json:"province"`
		Country  string `json:"country"`
		Zip      string `json:"zip"`
	} `json:"default_address"`
}

// ParseCustomer maps a customers/create or customers/update payload to a
// profile. It rejects a payload without a customer id.
func ParseCustomer(body []byte) (domain.CustomerProfile, error) {
	var pc platformCustomer
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&pc); err != nil {
		return domain.CustomerProfile{}, domain.Invalid("body", "malformed customer payload")
	}
	id := strings.TrimSpace(pc.ID.String())
	if id == "" || len(id) > 64 {
		return domain.CustomerProfile{}, domain.Invalid("id", "customer id is required")
	}
	p := domain.CustomerProfile{
		ExternalID: id, Email: trimmed(pc.Email), FirstName: trimmed(pc.FirstName),
		LastName: trimmed(pc.LastName), Phone: trimmed(pc.Phone), Note: trimmed(pc.Note),
		State: pc.State, Currency: pc.Currency, OrdersCount: max(pc.OrdersCount, 0),
		PlatformTags: domain.SplitPlatformTags(pc.Tags),
	}
	if pc.TotalSpent != "" {
		amount, err := domain.ParseAmount(pc.TotalSpent)
		if err != nil {
			return domain.CustomerProfile{}, domain.Invalid("total_spent", "malformed amount")
		}
		p.TotalSpent = amount
	}
	switch {
	case pc.EmailMarketingConsent != nil:
		p.AcceptsMarketing = pc.EmailMarketingConsent.State == "subscribed"
	case pc.AcceptsMarketing != nil:
		p.AcceptsMarketing = *pc.AcceptsMarketing
	}
	var err error
	if p.PlatformCreated, err = parseTime(pc.CreatedAt); err != nil {
		return domain.CustomerProfile{}, domain.Invalid("created_at", "%v", err)
	}
	if p.PlatformUpdated, err = parseTime(pc.UpdatedAt); err != nil {
		return domain.CustomerProfile{}, domain.Invalid("updated_at", "%v", err)
	}
	if a := pc.DefaultAddress; a != nil {
		p.Address = &domain.Address{Address1: a.Address1, Address2: a.Address2, City: a.City, Province: a.Province, Country: a.Country, Zip: a.Zip}
	}
	return p, nil
}

func trimmed(s *string) *string {
	if s == nil {
		return nil
	}
	t := strings.TrimSpace(*s)
	if t == "" {
		return nil
	}
	return &t
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("not an ISO 8601 timestamp")
	}
	return t.UTC(), nil
}
