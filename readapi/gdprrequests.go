package readapi

import (
	"github.com/cgp-platform/cgp/domain"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/gdprrequests"
)

// ScopeGDPRRequestsRead is the scope of the GDPR request list: the
// requests are about customers.
const ScopeGDPRRequestsRead = domain.ScopeCustomersRead

// GDPRRequests serves GET /api/v1/gdpr-requests (beta) from the GDPR
// requests read model.
type GDPRRequests struct {
	q       *gdprrequests.Queries
	auth    *auth.Authenticator
	cursors *httpapi.CursorCodec
	wait    Waiter
}

// NewGDPRRequests returns the GDPR request list handler.
func NewGDPRRequests(q *gdprrequests.Queries, a *auth.Authenticator, cursors *httpapi.CursorCodec, wait Waiter) *GDPRRequests {
	return &GDPRRequests{q: q, auth: a, cursors: cursors, wait: wait}
}

// gdprSortReceivedAt is the one sort field of the list (log order).
const gdprSortReceivedAt = "received_at"

// GDPRRequestListSpec is the allow-list of GET /api/v1/gdpr-requests.
var GDPRRequestListSpec = httpapi.ListSpec{Resource: "gdpr_requests", Sorts: []string{gdprSortReceivedAt}, DefaultSort: "-" + gdprSortReceivedAt}

// Routes registers the list.
func (g *GDPRRequests) Routes(r *mux.Router) {
	r.Handle("/api/v1/gdpr-requests", httpapi.Beta(httpapi.Compressed(g.auth.Require(ScopeGDPRRequestsRead, http.HandlerFunc(g.handleList))))).
		Methods(http.MethodGet)
}

func (g *GDPRRequests) handleList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, g.cursors, g.wait, gdprrequests.Name, GDPRRequestListSpec,
		func(params httpapi.ListParams, after *gdprrequests.Key) ([]httpapi.Resource, *gdprrequests.Key, error) {
			rows, next, err := g.q.Requests(r.Context(), p.ShopID, gdprrequests.Page{Desc: params.Sort.Desc, After: after, Limit: params.Limit})
			items := make([]httpapi.Resource, len(rows))
			for i := range rows {
				items[i] = GDPRRequestResource(&rows[i])
			}
			return items, next, err
		})
}

// GDPRRequestAttributes are a GDPR request's attributes in the admin API.
type GDPRRequestAttributes struct {
	Kind       string `json:"kind"`
	CustomerID string `json:"customer_id"`
	// PlatformRequestID is the commerce platform's id of the request.
	PlatformRequestID *string `json:"platform_request_id"`
	// Status is pending, retrying or completed.
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	// LastReason is why the last failed attempt failed (no_destination,
	// smtp_not_configured, http_500, timeout, …); null when none failed.
	LastReason *string `json:"last_reason"`
	// Channel is how the export went or was last tried: webhook or email.
	Channel       *string    `json:"channel"`
	ReceivedAt    time.Time  `json:"received_at"`
	DueAt         time.Time  `json:"due_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	CompletedAt   *time.Time `json:"completed_at"`
	// Bytes and SHA256 describe the delivered document once completed.
	Bytes  *int    `json:"bytes"`
	SHA256 *string `json:"sha256"`
}

// GDPRRequestResource renders a GDPR request.
func GDPRRequestResource(q *gdprrequests.Request) httpapi.Resource {
	a := GDPRRequestAttributes{Kind: q.Kind, CustomerID: q.CustomerID, PlatformRequestID: optional(q.PlatformRequestID),
		Status: q.Status, Attempts: q.Attempts, LastReason: optional(q.LastReason), Channel: optional(q.Channel),
		ReceivedAt: q.ReceivedAt, DueAt: q.DueAt, NextAttemptAt: zeroTimeAsNull(q.NextAttemptAt), CompletedAt: zeroTimeAsNull(q.CompletedAt),
		SHA256: optional(q.SHA256)}
	if !q.CompletedAt.IsZero() {
		n := q.Bytes
		a.Bytes = &n
	}
	return httpapi.Resource{ID: q.ID, Type: "gdpr_request", Attributes: a}
}
