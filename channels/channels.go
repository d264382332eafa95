// Package channels holds what the messaging channels' clients share: the
// failure of a send, classified so that the sending path knows whether to
// retry (and when) or to record the message as failed for good. Each
// channel's client is a package of its own below it (channels/whatsapp:
// the WhatsApp Cloud API; channels/email: SMTP with MIME; channels/sms: an
// SMS provider behind a generic HTTP contract), written against the
// provider's documented contract.
//
// It imports the standard library only.
package channels

import (
	"errors"
	"net/http"
	"net/url"
	"time"
)

// SendError is a send that did not reach the provider's acceptance.
// Code is safe to record and show (a provider's error code such as
// "131026", or one of the Code… constants); it never holds a recipient,
// a body, a token or a provider's free text.
type SendError struct {
	Code string
	// Retryable is true when the same send may succeed later (rate
	// limits, timeouts, the provider's 5xx); false when it never will
	// (invalid recipient, unknown template, no consent window, bad
	// credentials).
	Retryable bool
	// RetryAfter is the provider's hint, 0 when none.
	RetryAfter time.Duration
	// Status is the HTTP (or SMTP) status received, 0 when none.
	Status int
	err    error
}

// NewSendError returns a SendError with its cause (kept for the log, never
// shown to a shop).
func NewSendError(code string, retryable bool, status int, cause error) *SendError {
	return &SendError{Code: code, Retryable: retryable, Status: status, err: cause}
}

func (e *SendError) Error() string {
	msg := "send failed: " + e.Code
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}

func (e *SendError) Unwrap() error { return e.err }

// Codes of failures that are not a provider's own.
const (
	CodeTimeout        = "timeout"
	CodeConnectFailed  = "connect_failed"
	CodeRateLimited    = "rate_limited"
	CodeProviderError  = "provider_error"
	CodeInvalidRequest = "invalid_request"
	CodeUnauthorized   = "unauthorized"
	CodeRejected       = "rejected"
)

// Classify returns the SendError in err's chain; any other error is a
// retryable provider_error.
func Classify(err error) *SendError {
	var se *SendError
	if errors.As(err, &se) {
		return se
	}
	return &SendError{Code: CodeProviderError, Retryable: true, err: err}
}

// ClientDefaults fills what a provider client's configuration leaves zero:
// an HTTP client that follows no redirect (the APIs answer directly; a
// redirect is an error to see, not to follow), the timeout def and the
// real clock.
func ClientDefaults(hc **http.Client, timeout *time.Duration, def time.Duration, now *func() time.Time) {
	if *hc == nil {
		*hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if *timeout == 0 {
		*timeout = def
	}
	if *now == nil {
		*now = time.Now
	}
}

// ValidBaseURL tells whether s is a provider's base address a client may
// be configured with: absolute http or https, a host, no user info, query
// or fragment (the paths are appended to it).
func ValidBaseURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil && u.RawQuery == "" &&
		!u.ForceQuery && u.Fragment == ""
}

// PrintableASCII tells whether s is made of printable ASCII without
// spaces only, as an API key sent in a header must be (anything else
// fails in the transport as if the network had, and would be retried).
func PrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
