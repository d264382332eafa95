package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// What every receiver shares: reading the body under a size limit, turning
// a verified delivery into commands without ever losing it, and answering
// the sender in the one way it understands (2xx after the durable append,
// 503 with Retry-After when the service cannot take it now).

// Reasons a delivery is recorded as such instead of as domain events.
const (
	ReasonUnhandledTopic = "unhandled_topic" // a topic the service does not map
	ReasonUnprocessable  = "unprocessable"   // the payload could not be mapped
	ReasonParked         = "parked"          // the mapper failed unexpectedly (panicked)
	ReasonIgnored        = "ignored"         // valid, deliberately without effect
	ReasonRefused        = "refused"         // signed, but not admitted (another shop, a stale destructive delivery)
)

// ReadBody reads the request body, at most maxBody bytes. On failure it
// writes the error (413 above the limit) and returns false.
func ReadBody(w http.ResponseWriter, r *http.Request, maxBody int64) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			httpapi.WriteError(w, r, httpapi.PayloadTooLarge(maxBody))
			return nil, false
		}
		httpapi.WriteError(w, r, httpapi.InvalidParameter("body", "the request body could not be read"))
		return nil, false
	}
	return body, true
}

// Delivery is one verified inbound delivery.
type Delivery struct {
	Source      string    // commerce, whatsapp, provider:<name>, marketplace:<name>
	ShopID      string    // the shop it is for
	Topic       string    // the sender's topic or event kind
	DeliveryID  string    // the sender's delivery id, when it sends one (for logs)
	EventID     uuid.UUID // derived from the sender's delivery id (de-duplication)
	Body        []byte    // the raw body, as signed
	TriggeredAt time.Time // when the sender says it happened (zero if unknown)
	Meta        commands.Meta
}

// DeliveryRecorder records a delivery that is not mapped to domain events.
type DeliveryRecorder interface {
	RecordDelivery(ctx context.Context, cmd commands.RecordDelivery, meta commands.Meta) (commands.Result, error)
}

// ErrUnhandled is returned by a mapper for a delivery it does not map; the
// delivery is recorded with ReasonUnhandledTopic.
var ErrUnhandled = errors.New("delivery not mapped")

// Ignore is returned by a mapper for a valid delivery that deliberately
// changes nothing (a draft theme's update); it is recorded with
// ReasonIgnored and the detail.
type Ignore struct{ Detail string }

func (i Ignore) Error() string { return "ignored: " + i.Detail }

// Refuse is returned by a mapper (or the receiver's admission check) for a
// signed delivery the service must not act on: it names another shop, or
// a destructive topic's triggered-at is missing or outside the window. It
// is recorded with ReasonRefused and the detail (never a value of the
// body).
type Refuse struct{ Detail string }

func (r Refuse) Error() string { return "refused: " + r.Detail }

// Process runs mapper for d and makes sure the delivery ends in the log:
//   - mapper's events appended: its result;
//   - ErrUnhandled: recorded as an unhandled topic;
//   - Ignore: recorded as ignored;
//   - Refuse: recorded as refused, and logged at warn level;
//   - a client error (validation, not found, conflict: the payload does not
//     fit): recorded as unprocessable, since the sender would only retry it
//     forever; logged at warn level with topic, delivery id and reason
//     (never the body);
//   - a panic: recorded as parked, and the other deliveries keep flowing;
//   - any other error (the log cannot take the write): returned, so the
//     receiver answers 503 and the sender retries.
func Process(ctx context.Context, rec DeliveryRecorder, d Delivery, mapper func() (commands.Result, error)) (commands.Result, error) {
	res, err, panicked := guard(mapper)
	reason, detail := "", ""
	var ignore Ignore
	var refuse Refuse
	switch {
	case panicked:
		reason = ReasonParked
		log := httpapi.Logger(ctx)
		log.Error().Str("source", d.Source).Str("topic", d.Topic).Str("delivery_event_id", d.EventID.String()).
			Str("panic", fmt.Sprintf("%T", err)).Bytes("stack", debug.Stack()).Msg("webhook mapper panicked; delivery parked")
	case err == nil:
		return res, nil
	case errors.Is(err, ErrUnhandled):
		reason = ReasonUnhandledTopic
	case errors.As(err, &ignore):
		reason, detail = ReasonIgnored, ignore.Detail
	case errors.As(err, &refuse):
		reason, detail = ReasonRefused, refuse.Detail
	case isClientError(err):
		reason, detail = ReasonUnprocessable, clientDetail(err)
	default:
		return commands.Result{}, err
	}
	if reason == ReasonRefused || reason == ReasonUnprocessable {
		id := d.DeliveryID
		if id == "" {
			id = d.EventID.String()
		}
		httpapi.Logger(ctx).Warn().Str("source", d.Source).Str("topic", d.Topic).Str("delivery_id", id).
			Str("reason", reason).Str("detail", detail).Msg("signed webhook delivery recorded without effect")
	}
	return rec.RecordDelivery(ctx, commands.RecordDelivery{
		ShopID: d.ShopID, Source: d.Source, Topic: d.Topic, EventID: d.EventID,
		Payload: d.Body, TriggeredAt: d.TriggeredAt, Reason: reason, Detail: detail,
	}, d.Meta)
}

// clientDetail is what a client error says that is safe to keep and log:
// the field and the message of a *domain.Error (whose message never holds
// personal data), without its cause.
func clientDetail(err error) string {
	var de *domain.Error
	if !errors.As(err, &de) {
		return ""
	}
	if de.Field != "" {
		return de.Field + ": " + de.Message
	}
	return de.Message
}

// guard calls fn, turning a panic into an error.
func guard(fn func() (commands.Result, error)) (res commands.Result, err error, panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			res, err, panicked = commands.Result{}, fmt.Errorf("panic: %v", p), true
		}
	}()
	res, err = fn()
	return res, err, false
}

func isClientError(err error) bool {
	switch domain.ErrorCode(err) {
	case domain.CodeInvalid, domain.CodeNotFound, domain.CodeConflict, domain.CodeForbidden:
		return true
	}
	return false
}

// Acknowledge answers 200 {"status":"accepted"} with the position the
// delivery reached (header X-Event-Position), for read-your-writes.
func Acknowledge(w http.ResponseWriter, res commands.Result) {
	w.Header().Set(httpapi.HeaderEventPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"status": "accepted"})
}

// RetryAfter is the Retry-After sent with a receiver's 503.
const RetryAfter = 5 * time.Second

// Fail answers a delivery the service could not take: a client error as
// such, anything else 503 with Retry-After (never a bare 500), so the
// sender retries it later.
func Fail(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpapi.Error
	if errors.As(err, &he) || isClientError(err) {
		httpapi.WriteError(w, r, err)
		return
	}
	httpapi.Logger(r.Context()).Error().Err(err).Msg("webhook delivery not taken; the sender will retry")
	httpapi.WriteError(w, r, httpapi.Unavailable(RetryAfter))
}

// ParseTime reads an RFC 3339 timestamp header; zero when absent or bad.
func ParseTime(s string) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC()
	}
	return time.Time{}
}
