package photoroom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/channels"
)

// ProviderError is a scene request that did not bring back an image.
// Code is safe to record and show (one of the Code… constants); it never
// holds the prompt, the image, the key or the provider's free text.
type ProviderError struct {
	Code string
	// Retryable is true when the same request may succeed later (rate
	// limits, the provider's 5xx, a timeout); false when it never will or
	// when retrying could be charged again for nothing.
	Retryable bool
	// RetryAfter is the provider's hint, 0 when none.
	RetryAfter time.Duration
	// Status is the HTTP status received, 0 when none.
	Status int
	// ProviderType is the provider's own error type when its answer
	// carried one as a safe token ("missing_image"), else empty.
	ProviderType string
	err          error
}

func (e *ProviderError) Error() string {
	msg := "photoroom: " + e.Code
	if e.Status != 0 {
		msg += fmt.Sprintf(" (http %d)", e.Status)
	}
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}

func (e *ProviderError) Unwrap() error { return e.err }

// Codes of ProviderError.
const (
	CodeInvalidRequest   = "invalid_request"   // refused before sending, or the provider's 400/422
	CodeUnauthorized     = "unauthorized"      // 401: the key is wrong
	CodeCreditsExhausted = "credits_exhausted" // 402: the provider account has no credits left
	CodeForbidden        = "forbidden"         // 403: the key may not use this API (plan)
	CodeRejected         = "rejected"          // any other 4xx
	CodeRateLimited      = "rate_limited"      // 429
	CodeProviderError    = "provider_error"    // 5xx
	CodeTimeout          = "timeout"           // our deadline or the caller's
	CodeConnectFailed    = "connect_failed"    // no answer at all
	CodeRedirected       = "redirected"        // a 3xx: not followed
	CodeAnswerTooLarge   = "answer_too_large"  // more bytes than MaxResponse
	CodeInvalidAnswer    = "invalid_answer"    // a 2xx that is not a PNG, JPEG or WebP image
)

// errorString is a cause built only from the client's own words.
type errorString string

func (e errorString) Error() string { return string(e) }

// errorBody holds both documented error shapes: v2's {"error":{"message"}}
// or {"error":{"detail"}}, and v1's {"detail","status_code","type"}. Only
// type is kept: message and detail are free text that may echo the input.
type errorBody struct {
	Type  string          `json:"type"`
	Error json.RawMessage `json:"error"`
}

// ParseError classifies an answer that is not a success: status decides
// the Code and whether to retry (408, 429 and 5xx), header gives
// Retry-After (read against now), and raw, the body, gives the provider's
// error type when it is a safe token. It never fails nor panics,
// whatever the bytes.
func ParseError(status int, header http.Header, raw []byte, now time.Time) *ProviderError {
	var code string
	retry := false
	switch {
	case status == http.StatusTooManyRequests:
		code, retry = CodeRateLimited, true
	case status == http.StatusRequestTimeout:
		code, retry = CodeTimeout, true
	case status >= 500:
		code, retry = CodeProviderError, true
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		code = CodeInvalidRequest
	case status == http.StatusUnauthorized:
		code = CodeUnauthorized
	case status == http.StatusPaymentRequired:
		code = CodeCreditsExhausted
	case status == http.StatusForbidden:
		code = CodeForbidden
	case status >= 400:
		code = CodeRejected
	case status >= 300 && status < 400:
		code = CodeRedirected
	default: // 1xx, or a 2xx the caller found wanting
		code = CodeProviderError
	}
	cause := fmt.Sprintf("http %d", status)
	var b errorBody
	documented := json.Unmarshal(raw, &b) == nil && (b.Type != "" || len(b.Error) > 0)
	pe := &ProviderError{Code: code, Retryable: retry, Status: status}
	if t := safeToken(b.Type); documented && t != "" {
		pe.ProviderType = t
		cause += ", type " + t
	}
	if !documented && status >= 400 {
		cause += " without the documented error body"
	}
	pe.err = errorString(cause)
	if retry {
		pe.RetryAfter = channels.ParseRetryAfter(header.Get("Retry-After"), now)
	}
	return pe
}

// transportError classifies a failure before any answer. The cause keeps
// the error's kind, never the URL (which could carry a key in a
// misconfiguration).
func transportError(ctx context.Context, err error) *ProviderError {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &ProviderError{Code: CodeTimeout, Retryable: true, err: ctxErr}
	}
	var ne interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &ProviderError{Code: CodeTimeout, Retryable: true, err: err}
	}
	return &ProviderError{Code: CodeConnectFailed, Retryable: true, err: err}
}

// safeToken returns s when it is a short lowercase token ([a-z0-9_.-], at
// most 64 bytes), else "".
func safeToken(s string) string {
	if s == "" || len(s) > 64 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return ""
		}
	}
	return strings.Clone(s)
}

// ProviderCode is the error's Code: the image runner records it as the
// failed operation's reason without importing this package.
func (e *ProviderError) ProviderCode() string { return e.Code }
