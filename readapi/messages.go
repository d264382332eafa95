package readapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/messaging"
)

// Messages serves the message log: every message the service sent (or
// skipped, or failed to send) and the statuses the providers reported.
type Messages struct {
	q       *messaging.Queries
	auth    *auth.Authenticator
	cursors *httpapi.CursorCodec
	wait    Waiter
}

// NewMessages returns the message log's handlers.
func NewMessages(q *messaging.Queries, a *auth.Authenticator, cursors *httpapi.CursorCodec, wait Waiter) *Messages {
	return &Messages{q: q, auth: a, cursors: cursors, wait: wait}
}

// MessageStatuses are the statuses of the message log's filter.
func MessageStatuses() []string {
	return []string{domain.MessageStatusSent, domain.MessageStatusDelivered, domain.MessageStatusRead, domain.MessageStatusFailed,
		messaging.StatusSkipped}
}

// MessageListSpec is the allow-list of GET /api/v1/messages (newest
// first; the one sort is the log order).
var MessageListSpec = httpapi.ListSpec{
	Resource: "messages",
	Filters: map[string]httpapi.FilterKind{
		"customer_id": httpapi.StringFilter(), "campaign_id": httpapi.StringFilter(), "journey_id": httpapi.StringFilter(),
		"flow":    httpapi.EnumFilter(domain.Flows()...),
		"channel": httpapi.EnumFilter(domain.MessageChannels()...), "status": httpapi.EnumFilter(MessageStatuses()...),
	},
	Sorts:       []string{"created_at"},
	DefaultSort: "-created_at",
}

// Routes registers the message log.
func (m *Messages) Routes(r *mux.Router) {
	r.Handle("/api/v1/messages", httpapi.Beta(httpapi.Compressed(m.auth.Require(ScopeCampaignsRead, http.HandlerFunc(m.handleList))))).
		Methods(http.MethodGet)
	r.Handle("/api/v1/messages/{id}", httpapi.Beta(m.auth.Require(ScopeCampaignsRead, http.HandlerFunc(m.handleGet)))).
		Methods(http.MethodGet)
}

func (m *Messages) handleList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, m.cursors, m.wait, messaging.Name, MessageListSpec,
		func(params httpapi.ListParams, after *messaging.MessageKey) ([]httpapi.Resource, *messaging.MessageKey, error) {
			if !params.Sort.Desc {
				return nil, nil, domain.Invalid("sort", "the message log is listed newest first (sort=-created_at)")
			}
			f := params.Filters
			rows, next, err := m.q.Messages(r.Context(), messaging.MessageFilter{ShopID: p.ShopID, CustomerID: f["customer_id"],
				CampaignID: f["campaign_id"], JourneyID: f["journey_id"], Flow: f["flow"], Channel: f["channel"], Status: f["status"],
				After: after, Limit: params.Limit})
			items := make([]httpapi.Resource, len(rows))
			for i := range rows {
				items[i] = MessageResource(&rows[i])
			}
			return items, next, err
		})
}

func (m *Messages) handleGet(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	id := mux.Vars(r)["id"]
	ServeOne(w, r, m.wait, messaging.Name, p.ShopID,
		func(ctx context.Context, shop string) (*messaging.Sent, error) { return m.q.SentMessage(ctx, shop, id) }, MessageResource)
}

// MessageAttributes are a message's attributes in the admin API. The
// recipient is named by its customer id only: the address the message
// went to is not kept.
type MessageAttributes struct {
	CustomerID        *string    `json:"customer_id"`
	Channel           string     `json:"channel"`
	Intent            *string    `json:"intent"`
	Status            string     `json:"status"`
	CampaignID        *string    `json:"campaign_id"`
	JourneyID         *string    `json:"journey_id"`
	EnrollmentID      *string    `json:"enrollment_id"`
	Step              *int       `json:"step"`
	Flow              *string    `json:"flow"`
	Provider          *string    `json:"provider"`
	ProviderMessageID *string    `json:"provider_message_id"`
	SentAt            *time.Time `json:"sent_at"`
	DeliveredAt       *time.Time `json:"delivered_at"`
	OpenedAt          *time.Time `json:"opened_at"`
	FailedAt          *time.Time `json:"failed_at"`
	SkippedAt         *time.Time `json:"skipped_at"`
	SkipReason        *string    `json:"skip_reason"`
	ErrorCode         *string    `json:"error_code"`
	ErrorTitle        *string    `json:"error_title"`
	UpdatedAt         time.Time  `json:"updated_at"`
}

// MessageResource renders a message of the log.
func MessageResource(m *messaging.Sent) httpapi.Resource {
	var step *int
	if m.JourneyID != "" {
		step = &m.Step
	}
	return httpapi.Resource{ID: m.MessageID, Type: "message", Attributes: MessageAttributes{
		CustomerID: optional(m.CustomerID), Channel: m.Channel, Intent: optional(m.Intent), Status: m.Status,
		CampaignID: optional(m.CampaignID), JourneyID: optional(m.JourneyID), EnrollmentID: optional(m.EnrollmentID), Step: step,
		Flow: optional(m.Flow), Provider: optional(m.Provider), ProviderMessageID: optional(m.ProviderMessageID),
		SentAt: zeroTimeAsNull(m.SentAt), DeliveredAt: zeroTimeAsNull(m.DeliveredAt), OpenedAt: zeroTimeAsNull(m.OpenedAt),
		FailedAt: zeroTimeAsNull(m.FailedAt), SkippedAt: zeroTimeAsNull(m.SkippedAt), SkipReason: optional(m.SkipReason),
		ErrorCode: optional(m.ErrorCode), ErrorTitle: optional(m.ErrorTitle), UpdatedAt: m.UpdatedAt,
	}}
}
