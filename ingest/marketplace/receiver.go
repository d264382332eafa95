package marketplace

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/ingest"
)

// Path is the route of the receiver.
const Path = "/webhooks/marketplaces/{marketplace}"

// Connection is what the receiver needs of a seller account's connection.
type Connection struct {
	ShopID string
	Secret string
	AppKey string
}

// Connections finds connections. It is read on every delivery.
type Connections interface {
	// MarketplaceConnection returns the connection of a seller account on a
	// marketplace, or an error whose domain code is not_found.
	MarketplaceConnection(ctx context.Context, marketplace, accountID string) (*Connection, error)
}

// Recorder is the write side the receiver drives.
type Recorder interface {
	ingest.DeliveryRecorder
	RecordMarketplaceOrder(ctx context.Context, cmd commands.RecordMarketplaceOrder, meta commands.Meta) (commands.Result, error)
	RecordMarketplaceNotification(ctx context.Context, cmd commands.RecordMarketplaceNotification, meta commands.Meta) (commands.Result, error)
}

// Receiver receives every marketplace's webhooks.
type Receiver struct {
	conns   Connections
	rec     Recorder
	maxBody int64
	now     func() time.Time
}

// NewReceiver returns the receiver. maxBody <= 0 means
// ingest.DefaultMaxBody; now is the clock the timestamps are checked
// against (time.Now when nil).
func NewReceiver(conns Connections, rec Recorder, maxBody int64, now func() time.Time) *Receiver {
	if maxBody <= 0 {
		maxBody = ingest.DefaultMaxBody
	}
	if now == nil {
		now = time.Now
	}
	return &Receiver{conns: conns, rec: rec, maxBody: maxBody, now: now}
}

// Routes registers POST /webhooks/marketplaces/{marketplace} (beta: the
// path is DESIGN.md's, beyond the specification).
func (rc *Receiver) Routes(r *mux.Router) {
	httpapi.HandleFunc(r, httpapi.Beta, http.MethodPost, Path, rc.handleDelivery)
}

// handleDelivery: unknown marketplace 404; body over the limit 413; a
// missing signing header 401 signature_required; a bad or stale timestamp,
// an unknown account and a wrong signature the same 401 invalid_signature
// (the endpoint does not tell which accounts exist); then the shared
// pipeline (200 once durable, 503 with Retry-After when the log cannot
// take it).
func (rc *Receiver) handleDelivery(w http.ResponseWriter, r *http.Request) {
	c, ok := Lookup(mux.Vars(r)["marketplace"])
	if !ok {
		httpapi.WriteError(w, r, httpapi.NotFound("marketplace"))
		return
	}
	body, ok := ingest.ReadBody(w, r, rc.maxBody)
	if !ok {
		return
	}
	s, err := c.check(r.Header, rc.now())
	if err != nil {
		httpapi.WriteError(w, r, signatureError(err))
		return
	}
	account := c.account(r.Header, body)
	conn, err := rc.connection(r.Context(), c, account)
	if err != nil {
		ingest.Fail(w, r, err)
		return
	}
	if conn == nil || !c.matches(s, body, conn.Secret, conn.AppKey) {
		httpapi.WriteError(w, r, httpapi.InvalidSignature())
		return
	}
	deliveryID, err := c.deliveryID(r.Header, body)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	topic := c.kind(r.Header, body)
	httpapi.AddLogFields(r.Context(), "topic", topic, "delivery_id", deliveryID)
	d := ingest.Delivery{
		Source: "marketplace:" + c.Name, ShopID: conn.ShopID, Topic: topic,
		EventID:     eventlog.DeterministicID("marketplace", c.Name, conn.ShopID, deliveryID),
		Body:        body,
		TriggeredAt: s.at,
		Meta:        commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: "webhook:" + deliveryID, Source: "webhook"},
	}
	res, err := ingest.Process(r.Context(), rc.rec, d, func() (commands.Result, error) {
		return rc.record(r.Context(), c, account, d)
	})
	if err != nil {
		ingest.Fail(w, r, err)
		return
	}
	ingest.Acknowledge(w, res)
}

// connection finds the account's connection: nil when the delivery names
// no account or an unknown one, an error only when the read model fails.
func (rc *Receiver) connection(ctx context.Context, c *Contract, account string) (*Connection, error) {
	if account == "" || len(account) > domain.MaxMarketplaceIDLength {
		return nil, nil
	}
	conn, err := rc.conns.MarketplaceConnection(ctx, c.Name, account)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return nil, nil
	}
	return conn, err
}

// record maps a verified delivery to its command.
func (rc *Receiver) record(ctx context.Context, c *Contract, account string, d ingest.Delivery) (commands.Result, error) {
	n, err := c.Parse(d.Body, d.TriggeredAt)
	if err != nil {
		return commands.Result{}, err
	}
	if o := n.Order; o != nil {
		return rc.rec.RecordMarketplaceOrder(ctx, commands.RecordMarketplaceOrder{ShopID: d.ShopID, EventID: d.EventID,
			Update: domain.MarketplaceOrderUpdate{Marketplace: c.Name, AccountID: account, MarketplaceOrderID: o.ID,
				Kind: n.Kind, Status: o.Status, Total: o.Total, Currency: o.Currency, OccurredAt: n.OccurredAt}}, d.Meta)
	}
	return rc.rec.RecordMarketplaceNotification(ctx, commands.RecordMarketplaceNotification{ShopID: d.ShopID, EventID: d.EventID,
		Notice: domain.MarketplaceNotice{Marketplace: c.Name, AccountID: account, Kind: n.Kind,
			ResourceID: n.ResourceID, OccurredAt: n.OccurredAt}}, d.Meta)
}

// signatureError maps a failed check to its 401.
func signatureError(err error) error {
	var missing *MissingError
	if errors.As(err, &missing) {
		return &httpapi.Error{Status: http.StatusUnauthorized, Code: httpapi.CodeSignatureRequired,
			Message: "the signature header " + missing.Header + " is required",
			Details: map[string]any{"field": missing.Header}}
	}
	if errors.Is(err, ErrTimestamp) {
		return &httpapi.Error{Status: http.StatusUnauthorized, Code: httpapi.CodeInvalidSignature,
			Message: "the signature timestamp is malformed or outside the accepted window"}
	}
	return httpapi.InvalidSignature()
}
