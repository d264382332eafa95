package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// Response header names set by this package.
const (
	HeaderRequestID  = "X-Request-Id"
	HeaderStability  = "X-Service-Stability"
	HeaderRetryAfter = "Retry-After"
	contentTypeJSON  = "application/json"
)

// WriteError answers err in the error envelope
// {"error":{"code","message","details","request_id"}}. It is the one place
// where failures become a status and a code:
//
//   - a *Error is sent as it is;
//   - a *domain.Error by its Code: validation_failed → 422 with
//     details.field, not_found → 404, conflict → 409, forbidden → 403,
//     unavailable → 503 with Retry-After, credits_exhausted → 402 with
//     details.remaining and details.resets_at (from its *CreditShortfall);
//   - eventlog.ErrUnavailable → 503 unavailable with Retry-After;
//     eventlog.ErrWrongExpectedRevision (a concurrent write the command did
//     not resolve) → 409 conflict;
//   - the request's own context error (the client went away) → 503,
//     logged at info level only;
//   - anything else → 500 internal_error with a generic message; the error
//     itself goes to the request logger, never to the client.
//
// Errors are found with errors.As / errors.Is, so wrapping keeps them.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	e, level := classify(r.Context(), err)
	ev := Logger(r.Context()).WithLevel(level)
	if level >= zerolog.WarnLevel {
		// Only server-side failures carry the error text: client mistakes
		// are the client's business, and their text may echo its input.
		ev = ev.Err(err)
	}
	ev.Int("status", e.Status).Str("code", e.Code).Msg("request failed")
	writeErrorEnvelope(w, r, e)
}

// classify maps err to the *Error to send and the level to log it at.
func classify(ctx context.Context, err error) (*Error, zerolog.Level) {
	var he *Error
	if errors.As(err, &he) {
		return he, levelFor(he.Status)
	}
	var de *domain.Error
	if errors.As(err, &de) {
		switch de.Code {
		case domain.CodeInvalid:
			return ValidationFailed(de.Field, de.Message), zerolog.DebugLevel
		case domain.CodeNotFound:
			return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: de.Message}, zerolog.DebugLevel
		case domain.CodeConflict:
			return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: de.Message}, zerolog.DebugLevel
		case domain.CodeForbidden:
			return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: de.Message}, zerolog.DebugLevel
		case domain.CodeUnavailable:
			return Unavailable(DefaultRetryAfter), zerolog.WarnLevel
		case domain.CodeCreditsExhausted:
			var sf *domain.CreditShortfall
			if errors.As(de, &sf) {
				return CreditsExhausted(sf.Remaining, sf.ResetsAt), zerolog.DebugLevel
			}
			return internalError(), zerolog.ErrorLevel
		}
		return internalError(), zerolog.ErrorLevel
	}
	if errors.Is(err, eventlog.ErrUnavailable) {
		return Unavailable(DefaultRetryAfter), zerolog.WarnLevel
	}
	if errors.Is(err, eventlog.ErrWrongExpectedRevision) {
		// Retry-After marks it as retryable (an Idempotency-Key is then
		// released, not bound to this answer).
		return &Error{Status: http.StatusConflict, Code: CodeConflict, RetryAfter: time.Second,
			Message: "the resource was changed by a concurrent request; retry"}, zerolog.DebugLevel
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		// The client went away or the request outlived its deadline: nobody
		// reads this answer, and it is not a failure of ours.
		return Unavailable(DefaultRetryAfter), zerolog.InfoLevel
	}
	return internalError(), zerolog.ErrorLevel
}

func levelFor(status int) zerolog.Level {
	switch {
	case status >= 500:
		return zerolog.WarnLevel
	default:
		return zerolog.DebugLevel
	}
}

type errorEnvelope struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Details   map[string]any `json:"details"`
	RequestID string         `json:"request_id"`
}

func writeErrorEnvelope(w http.ResponseWriter, r *http.Request, e *Error) {
	if st := stateFrom(r.Context()); st != nil {
		st.code = e.Code
	}
	id := RequestID(r.Context())
	if id == "" {
		// Outside the Stack (a bare handler in a test): still honour the
		// contract that every error carries a request id.
		id = domain.NewID(domain.PrefixRequest)
		w.Header().Set(HeaderRequestID, id)
	}
	details := e.Details
	if details == nil {
		details = map[string]any{}
	}
	h := w.Header()
	retry := e.RetryAfter
	if retry <= 0 && (e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable) {
		retry = DefaultRetryAfter
	}
	if retry > 0 {
		h.Set(HeaderRetryAfter, retryAfterSeconds(retry))
	}
	switch e.Code {
	case CodeAuthenticationRequired:
		h.Set("WWW-Authenticate", `Bearer realm="cgp"`)
	case CodeInvalidToken:
		h.Set("WWW-Authenticate", `Bearer realm="cgp", error="invalid_token"`)
	}
	body, err := json.Marshal(errorEnvelope{Error: errorObject{
		Code: e.Code, Message: e.Message, Details: details, RequestID: id}})
	if err != nil {
		// Details held something JSON cannot encode: a programming error.
		Logger(r.Context()).Error().Err(err).Str("code", e.Code).Msg("encode error envelope")
		body, _ = json.Marshal(errorEnvelope{Error: errorObject{
			Code: CodeInternal, Message: internalError().Message, Details: map[string]any{}, RequestID: id}})
		e = internalError()
	}
	writeBody(w, e.Status, body)
}

func retryAfterSeconds(d time.Duration) string {
	s := int64(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}

// WriteJSON answers status with v encoded as JSON, for the few responses
// that are not resources (an acknowledgement, a status). v is encoded before
// anything is written: if that fails, the client gets a 500 internal_error
// envelope and the error is returned for the caller to log.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		id := w.Header().Get(HeaderRequestID)
		if id == "" {
			id = domain.NewID(domain.PrefixRequest)
			w.Header().Set(HeaderRequestID, id)
		}
		ie := internalError()
		body, _ = json.Marshal(errorEnvelope{Error: errorObject{
			Code: ie.Code, Message: ie.Message, Details: map[string]any{}, RequestID: id}})
		writeBody(w, ie.Status, body)
		return fmt.Errorf("encode response: %w", err)
	}
	writeBody(w, status, body)
	return nil
}

// writeJSON encodes v before writing anything, so an encoding failure can
// still become a clean, logged 500.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	writeBody(w, status, body)
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(body) // a failed write means the client is gone; nothing to do
}
