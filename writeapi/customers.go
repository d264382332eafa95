package writeapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/readapi"
)

// MaxBody is the largest admin API request body.
const MaxBody = 256 << 10

// Customers serves the customer writes.
type Customers struct {
	idem func(http.Handler) http.Handler
	cmds *commands.Handler
	auth *auth.Authenticator
	q    *customers.Queries
	wait readapi.Waiter
	now  func() time.Time
}

// NewCustomers returns the customer write handlers.
// idem wraps every write in Idempotency-Key handling (inside
// authentication, so keys are scoped to the token).
func NewCustomers(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler, q *customers.Queries, wait readapi.Waiter, now func() time.Time) *Customers {
	return &Customers{cmds: cmds, auth: a, idem: idem, q: q, wait: wait, now: now}
}

// Routes registers the customer writes.
func (c *Customers) Routes(r *mux.Router) {
	r.Handle("/api/v1/customers/{customer_id}", httpapi.Stable(c.auth.Require(domain.ScopeCustomersWrite, c.idem(http.HandlerFunc(c.handleCustomerPatch))))).Methods(http.MethodPatch)
	r.Handle("/api/v1/customers/{customer_id}/consents", httpapi.Beta(c.auth.Require(domain.ScopeCustomersWrite, c.idem(http.HandlerFunc(c.handleConsentCreate))))).Methods(http.MethodPost)
}

type customerPatch struct {
	Tags *[]string `json:"tags"`
}

// handleCustomerPatch sets a customer's tags. It answers with the customer
// as the read model shows it once the projection has caught up with the
// command (bounded by httpapi.MaxWait); if the projection is slower than
// that, the row is answered with the command's tags applied.
func (c *Customers) handleCustomerPatch(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body customerPatch
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if body.Tags == nil {
		httpapi.WriteError(w, r, httpapi.ValidationFailed("tags", "tags is required"))
		return
	}
	id := mux.Vars(r)["customer_id"]
	res, err := c.cmds.SetCustomerTags(r.Context(), commands.SetCustomerTags{ShopID: p.ShopID, CustomerID: id, Tags: *body.Tags},
		commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: p.TokenID, Source: "api"})
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	readapi.ServeWritten(w, r, c.wait, customers.Name, res.Position, http.StatusOK,
		func(ctx context.Context) (*customers.Customer, error) { return c.q.Get(ctx, p.ShopID, id) },
		func(cust *customers.Customer) {
			cust.Tags, _ = domain.NormalizeTags(*body.Tags) // validated by the command already
		},
		func(cust *customers.Customer) httpapi.Resource { return readapi.CustomerResource(cust, c.now()) })
}

type consentBody struct {
	Channel *string `json:"channel"`
	State   *string `json:"state"`
}

// ConsentDecisionAttributes are a recorded consent decision as the API
// shows it.
type ConsentDecisionAttributes struct {
	CustomerID string    `json:"customer_id"`
	Channel    string    `json:"channel"`
	State      string    `json:"state"`
	Source     string    `json:"source"`
	DecidedAt  time.Time `json:"decided_at"`
}

// handleConsentCreate records a customer's marketing consent decision on
// one channel (source api): 201 with the decision. The customer must be
// one of the token's shop.
func (c *Customers) handleConsentCreate(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body consentBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	switch {
	case body.Channel == nil:
		httpapi.WriteError(w, r, httpapi.ValidationFailed("channel", "channel is required: email, sms or whatsapp"))
		return
	case body.State == nil:
		httpapi.WriteError(w, r, httpapi.ValidationFailed("state", "state is required: subscribed or unsubscribed"))
		return
	}
	id := mux.Vars(r)["customer_id"]
	now := c.now().UTC()
	d := domain.ConsentDecision{ShopID: p.ShopID, CustomerID: id, Channel: *body.Channel, State: *body.State,
		Source: domain.ConsentSourceAPI, At: now}
	if _, err := d.Decide(now); err != nil { // a bad channel or state is 422 before the customer is looked up
		httpapi.WriteError(w, r, err)
		return
	}
	if _, err := c.q.Get(r.Context(), p.ShopID, id); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	res, err := c.cmds.RecordConsent(r.Context(), commands.RecordConsent{Decision: d},
		commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: p.TokenID, Source: "api"})
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(uint64(res.Position), 10))
	httpapi.WriteResource(w, r, http.StatusCreated, httpapi.Resource{
		ID: id + ":" + d.Channel, Type: "consent_decision",
		Attributes: &ConsentDecisionAttributes{CustomerID: id, Channel: d.Channel, State: d.State, Source: d.Source, DecidedAt: now},
	})
}
