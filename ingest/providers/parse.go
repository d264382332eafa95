package providers

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/payload"
)

// Callback is a provider's delivery callback: the statuses of messages it
// delivered for the shop.
type Callback struct {
	Statuses []domain.MessageStatus
}

type rawCallback struct {
	Statuses []struct {
		MessageID string       `json:"message_id"`
		Status    string       `json:"status"`
		Timestamp timestamp    `json:"timestamp"`
		ErrorCode payload.Text `json:"error_code"`
		// ClientReference is the client_reference the message was sent
		// with (the service's message id).
		ClientReference string `json:"client_reference"`
	} `json:"statuses"`
}

// Parse reads a callback of provider. Its shape (documented in the OpenAPI
// document, since the specification does not show one) is
//
//	{"statuses": [{"message_id": "…", "status": "delivered|read|failed",
//	  "timestamp": RFC 3339 or epoch seconds, "error_code": "…" or 123}]}
//
// It fails with a validation *domain.Error naming the field; the values of
// each status are checked by the command that records it.
func Parse(provider string, body []byte) (*Callback, error) {
	var raw rawCallback
	if err := payload.Decode(body, &raw); err != nil {
		return nil, err
	}
	if raw.Statuses == nil {
		return nil, domain.Invalid("statuses", "statuses is required")
	}
	out := &Callback{Statuses: make([]domain.MessageStatus, 0, len(raw.Statuses))}
	for _, s := range raw.Statuses {
		out.Statuses = append(out.Statuses, domain.MessageStatus{Source: "provider:" + provider, MessageID: s.MessageID,
			Status: s.Status, At: time.Time(s.Timestamp), ErrorCode: string(s.ErrorCode), ClientReference: s.ClientReference})
	}
	return out, nil
}

// maxEpoch bounds epoch-second timestamps (the year 5138).
const maxEpoch = 1e11

// timestamp is an RFC 3339 string or epoch seconds (a number or a numeric
// string); null or absent is the zero time.
type timestamp time.Time

// UnmarshalJSON accepts an RFC 3339 string, epoch seconds or null.
func (t *timestamp) UnmarshalJSON(b []byte) error {
	var c payload.Text
	if err := c.UnmarshalJSON(b); err != nil {
		return err
	}
	s := strings.TrimSpace(string(c))
	if s == "" {
		*t = timestamp{}
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n <= 0 || n > maxEpoch {
			return errors.New("timestamp out of range")
		}
		*t = timestamp(time.Unix(n, 0).UTC())
		return nil
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || v.Year() < 1970 || v.Year() > 9999 {
		return errors.New("timestamp must be RFC 3339 or epoch seconds")
	}
	*t = timestamp(v.UTC())
	return nil
}
