package readapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/customers"
)

// Waiter blocks until the read models reached a position (read-your-writes).
type Waiter interface {
	WaitFor(ctx context.Context, pos eventlog.Position, projectors ...string) error
}

// Customers serves the customer reads.
type Customers struct {
	q       *customers.Queries
	auth    *auth.Authenticator
	cursors *httpapi.CursorCodec
	wait    Waiter
	now     func() time.Time
	asOf    *AsOf // nil: as_of is not served
}

// WithAsOf serves GET /api/v1/customers/{id}?as_of=… from the log.
func (c *Customers) WithAsOf(a *AsOf) *Customers {
	c.asOf = a
	return c
}

// NewCustomers returns the customer read handlers.
func NewCustomers(q *customers.Queries, a *auth.Authenticator, cursors *httpapi.CursorCodec, wait Waiter, now func() time.Time) *Customers {
	return &Customers{q: q, auth: a, cursors: cursors, wait: wait, now: now}
}

// CustomerListSpec is the allow-list of the customer list's parameters.
var CustomerListSpec = httpapi.ListSpec{
	Resource: "customers",
	Filters: map[string]httpapi.FilterKind{
		"lifecycle_stage": httpapi.EnumFilter(domain.LifecycleStages()...),
	},
	Sorts:       []string{customers.SortCreatedAt, customers.SortLastOrderAt, customers.SortTotalSpent},
	DefaultSort: "-" + customers.SortCreatedAt,
}

// Routes registers the customer reads.
func (c *Customers) Routes(r *mux.Router) {
	r.Handle("/api/v1/customers", httpapi.Stable(httpapi.Compressed(c.auth.Require(domain.ScopeCustomersRead, http.HandlerFunc(c.handleCustomerList))))).Methods(http.MethodGet)
	r.Handle("/api/v1/customers/{customer_id}", httpapi.Stable(c.auth.Require(domain.ScopeCustomersRead, http.HandlerFunc(c.handleCustomerGet)))).Methods(http.MethodGet)
}

func (c *Customers) handleCustomerList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	params, err := httpapi.ParseList(r, CustomerListSpec, c.cursors)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if err := WaitForPosition(r, c.wait, customers.Name); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	q := customers.ListQuery{
		Shop: p.ShopID, Stage: params.Filters["lifecycle_stage"], Sort: params.Sort.Field,
		Desc: params.Sort.Desc, Limit: params.Limit, Now: c.now(),
	}
	if params.Cursor != nil {
		var k customers.Key
		if err := params.Cursor.Decode(&k); err != nil {
			httpapi.WriteError(w, r, httpapi.InvalidCursor())
			return
		}
		q.After = &k
	}
	rows, next, err := c.q.List(r.Context(), q)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	items := make([]httpapi.Resource, len(rows))
	for i := range rows {
		items[i] = CustomerResource(&rows[i], q.Now)
	}
	page := httpapi.Page{}
	if next != nil {
		if page.NextCursor, err = c.cursors.Encode(params.Fingerprint, next); err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
	}
	httpapi.WriteList(w, r, items, page)
}

func (c *Customers) handleCustomerGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["customer_id"]
	if c.asOf != nil {
		at, ok, err := ParseAsOf(r, c.now())
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		if ok {
			c.handleCustomerAsOf(w, r, p.ShopID, id, at)
			return
		}
	}
	type withConsent struct {
		cust    *customers.Customer
		consent map[string]customers.ChannelConsent
	}
	ServeOne(w, r, c.wait, customers.Name, p.ShopID,
		func(ctx context.Context, shop string) (withConsent, error) {
			cust, err := c.q.Get(ctx, shop, id)
			if err != nil {
				return withConsent{}, err
			}
			states, err := c.q.Consent(ctx, shop, id)
			return withConsent{cust, states}, err
		},
		func(wc withConsent) httpapi.Resource {
			res := CustomerResource(wc.cust, c.now())
			res.Attributes.(*CustomerAttributes).Consent = ConsentOf(wc.consent)
			return res
		})
}

// Consent is a customer's marketing consent per channel (GET
// /api/v1/customers/{id}).
type Consent struct {
	Email    ChannelConsent `json:"email"`
	SMS      ChannelConsent `json:"sms"`
	WhatsApp ChannelConsent `json:"whatsapp"`
}

// ChannelConsent is the consent on one channel: the most recent decision's
// state (the platform's states as it sends them, subscribed or
// unsubscribed for the service's own decisions, unknown when nothing is
// known), its source (platform, inbound_reply, unsubscribe_link, api;
// null when unknown) and its time (null when unknown).
type ChannelConsent struct {
	State     string     `json:"state"`
	Source    *string    `json:"source"`
	UpdatedAt *time.Time `json:"updated_at"`
}

// ConsentOf renders the consent per channel.
func ConsentOf(states map[string]customers.ChannelConsent) *Consent {
	one := func(ch string) ChannelConsent {
		s, ok := states[ch]
		if !ok || s.Source == "" {
			return ChannelConsent{State: domain.ConsentUnknown}
		}
		src, at := s.Source, s.DecidedAt
		return ChannelConsent{State: s.State, Source: &src, UpdatedAt: &at}
	}
	return &Consent{Email: one(domain.ChannelEmail), SMS: one(domain.ChannelSMS), WhatsApp: one(domain.ChannelWhatsApp)}
}

// CustomerAttributes are a customer's attributes as the API shows them
// (a struct, not a map: list pages encode a hundred of them).
type CustomerAttributes struct {
	Email            *string    `json:"email"`
	FirstName        *string    `json:"first_name"`
	LastName         *string    `json:"last_name"`
	Phone            *string    `json:"phone"`
	LifecycleStage   string     `json:"lifecycle_stage"`
	TotalSpent       float64    `json:"total_spent"`
	Currency         string     `json:"currency"`
	OrdersCount      int        `json:"orders_count"`
	LastOrderAt      *time.Time `json:"last_order_at"`
	Tags             []string   `json:"tags"`
	PlatformTags     []string   `json:"platform_tags"`
	AcceptsMarketing bool       `json:"accepts_marketing"`
	State            string     `json:"state"`
	Redacted         bool       `json:"redacted"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	// Consent is shown by GET /api/v1/customers/{id} only.
	Consent *Consent `json:"consent,omitempty"`
}

// CustomerResource renders a customer in the single-resource shape.
func CustomerResource(c *customers.Customer, now time.Time) httpapi.Resource {
	var lastOrder *time.Time
	if !c.LastOrderAt.IsZero() {
		t := c.LastOrderAt
		lastOrder = &t
	}
	return httpapi.Resource{
		ID:   c.ID,
		Type: "customer",
		Attributes: &CustomerAttributes{
			Email:            c.Email,
			FirstName:        c.FirstName,
			LastName:         c.LastName,
			Phone:            c.Phone,
			LifecycleStage:   domain.LifecycleStage(c.OrdersCount, c.LastOrderAt, now),
			TotalSpent:       c.TotalSpent.Float(),
			Currency:         c.Currency,
			OrdersCount:      c.OrdersCount,
			LastOrderAt:      lastOrder,
			Tags:             nonNil(c.Tags),
			PlatformTags:     nonNil(c.PlatformTags),
			AcceptsMarketing: c.AcceptsMarketing,
			State:            c.State,
			Redacted:         c.Redacted,
			CreatedAt:        c.CreatedAt,
			UpdatedAt:        c.UpdatedAt,
		},
		Relationships: map[string]httpapi.Relationship{
			"orders": {Links: httpapi.Links{Related: "/api/v1/customers/" + c.ID + "/orders"}},
		},
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
