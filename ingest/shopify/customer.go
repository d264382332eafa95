package shopify

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
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

// ParseCustomer parses a customers/create or customers/update payload. It
// rejects a payload without a customer id.
func ParseCustomer(body []byte) (Customer, error) {
	var r struct {
		ID          json.Number `json:"id"`
		Email       string      `json:"email"`
		FirstName   string      `json:"first_name"`
		LastName    string      `json:"last_name"`
		Phone       string      `json:"phone"`
		State       string      `json:"state"`
		Currency    string      `json:"currency"`
		Tags        string      `json:"tags"`
		OrdersCount int         `json:"orders_count"`
		TotalSpent  decimal     `json:"total_spent"`
		CreatedAt   string      `json:"created_at"`
		UpdatedAt   string      `json:"updated_at"`
	}
	if err := decode(body, &r); err != nil {
		return Customer{}, err
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
		return Customer{}, c.err
	}
	return cu, nil
}
