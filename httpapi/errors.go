package httpapi

import (
	"fmt"
	"net/http"
	"time"
)

// Error codes sent in error.code. They are part of the public contract:
// never rename one.
const (
	CodeAuthenticationRequired = "authentication_required"
	CodeInvalidToken           = "invalid_token"
	CodePlanRequired           = "plan_required"
	CodeScopeRequired          = "scope_required"
	CodeForbidden              = "forbidden"
	CodeValidationFailed       = "validation_failed"
	CodeInvalidParameter       = "invalid_parameter"
	CodeInvalidCursor          = "invalid_cursor"
	CodeInvalidJSON            = "invalid_json"
	CodeNotFound               = "not_found"
	CodeConflict               = "conflict"
	CodeIdempotencyKeyReused   = "idempotency_key_reused"
	CodeIdempotencyKeyInUse    = "idempotency_key_in_use"
	CodeRateLimited            = "rate_limited"
	CodeTooManyFailedAttempts  = "too_many_failed_attempts"
	CodeIPBlocked              = "ip_blocked"
	CodeCreditsExhausted       = "credits_exhausted"
	CodeUnavailable            = "unavailable"
	CodePayloadTooLarge        = "payload_too_large"
	CodeMethodNotAllowed       = "method_not_allowed"
	CodeUnsupportedMediaType   = "unsupported_media_type"
	CodeSignatureRequired      = "signature_required"
	CodeInvalidSignature       = "invalid_signature"
	CodeInternal               = "internal_error"
)

// DefaultRetryAfter is the Retry-After sent with a 429 or 503 whose Error
// does not say how long to wait.
const DefaultRetryAfter = 5 * time.Second

// Error is an HTTP-level failure: it already knows its status and code.
// Handlers return one (or a *domain.Error, which WriteError maps) and never
// write an error response themselves.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Code is the stable error.code (one of the Code… constants).
	Code string
	// Message is safe to show to a client: never personal data or secrets.
	Message string
	// Details is sent as error.details (an empty object when nil).
	Details map[string]any
	// RetryAfter, when positive, is sent as the Retry-After header
	// (seconds, rounded up).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// AuthenticationRequired: no bearer token on the admin API (401).
func AuthenticationRequired() *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeAuthenticationRequired,
		Message: "a bearer token is required: send Authorization: Bearer <token>"}
}

// InvalidToken: unknown, malformed or revoked token, or a public key used on
// the admin API (401). The message never says which, so tokens cannot be
// probed.
func InvalidToken() *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeInvalidToken,
		Message: "the token is invalid or has been revoked"}
}

// PlanRequired: the shop's plan does not include the feature (403). plans,
// when given, are sent as details.required_plans.
func PlanRequired(plans ...string) *Error {
	e := &Error{Status: http.StatusForbidden, Code: CodePlanRequired,
		Message: "the shop's plan does not include this feature"}
	if len(plans) > 0 {
		e.Details = map[string]any{"required_plans": plans}
	}
	return e
}

// ScopeRequired: the token or key lacks scope (403); the message and
// details.required_scope name it.
func ScopeRequired(scope string) *Error {
	return &Error{Status: http.StatusForbidden, Code: CodeScopeRequired,
		Message: "this operation requires the scope " + scope,
		Details: map[string]any{"required_scope": scope}}
}

// ValidationFailed: the body breaks a rule (422); details.field names the
// offending field.
func ValidationFailed(field, message string) *Error {
	return &Error{Status: http.StatusUnprocessableEntity, Code: CodeValidationFailed,
		Message: message, Details: map[string]any{"field": field}}
}

// InvalidParameter: a query parameter is invalid or not allowed (400);
// details.field names it (e.g. "limit", "filter[foo]").
func InvalidParameter(field, message string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalidParameter,
		Message: message, Details: map[string]any{"field": field}}
}

// InvalidCursor: the cursor was not issued by us or belongs to another query
// (400).
func InvalidCursor() *Error {
	return invalidCursor("the cursor is invalid or was issued for another query")
}

func invalidCursor(message string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalidCursor, Message: message,
		Details: map[string]any{"field": "cursor"}}
}

// InvalidJSON: the body is not well-formed JSON (400).
func InvalidJSON() *Error { return invalidJSON("the request body is not valid JSON") }

func invalidJSON(message string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalidJSON, Message: message}
}

// NotFound: the resource of the given kind ("customer") does not exist or
// belongs to another shop (404).
func NotFound(kind string) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: kind + " not found"}
}

// IdempotencyKeyReused: the Idempotency-Key was used within 24 hours with a
// different request (409).
func IdempotencyKeyReused() *Error {
	return &Error{Status: http.StatusConflict, Code: CodeIdempotencyKeyReused,
		Message: "this Idempotency-Key was already used with a different request"}
}

// IdempotencyKeyInUse: the first request with this Idempotency-Key is still
// running (409).
func IdempotencyKeyInUse() *Error {
	return &Error{Status: http.StatusConflict, Code: CodeIdempotencyKeyInUse,
		Message: "a request with this Idempotency-Key is still in progress"}
}

// RateLimited: the token's rate limit is exceeded (429 with Retry-After).
func RateLimited(retryAfter time.Duration) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: CodeRateLimited,
		Message: "rate limit exceeded", RetryAfter: retryAfter}
}

// TooManyFailedAttempts: too many failed authentications from this IP in a
// minute (429 with Retry-After).
func TooManyFailedAttempts(retryAfter time.Duration) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: CodeTooManyFailedAttempts,
		Message: "too many failed authentication attempts", RetryAfter: retryAfter}
}

// IPBlocked: the IP is blocked after repeated failures (429 with
// Retry-After, at most an hour).
func IPBlocked(retryAfter time.Duration) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: CodeIPBlocked,
		Message: "this address is temporarily blocked", RetryAfter: retryAfter}
}

// CreditsExhausted: the shop's AI credits for the month cannot cover the
// operation (402); details.remaining is what is left of the month's budget
// and details.resets_at when the next month's budget starts.
func CreditsExhausted(remaining int, resetsAt time.Time) *Error {
	return &Error{Status: http.StatusPaymentRequired, Code: CodeCreditsExhausted,
		Message: "the shop's AI credits for this month are used up",
		Details: map[string]any{"remaining": remaining, "resets_at": resetsAt.UTC().Format(time.RFC3339)}}
}

// Unavailable: the event log or a required store cannot serve now (503 with
// Retry-After).
func Unavailable(retryAfter time.Duration) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
		Message: "the service is temporarily unavailable, retry later", RetryAfter: retryAfter}
}

// PayloadTooLarge: the body exceeds maxBytes (413); details.max_bytes says
// the limit.
func PayloadTooLarge(maxBytes int64) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodePayloadTooLarge,
		Message: "the request body is too large", Details: map[string]any{"max_bytes": maxBytes}}
}

// MethodNotAllowed: the path exists but not with this method (405).
func MethodNotAllowed() *Error {
	return &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
		Message: "the method is not allowed on this path"}
}

// UnsupportedMediaType: a body was sent with a Content-Type other than JSON
// (415).
func UnsupportedMediaType() *Error {
	return &Error{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMediaType,
		Message: "the request body must be sent with Content-Type: application/json"}
}

// SignatureRequired: an inbound webhook arrived without its signature header
// (400); details.field names the header.
func SignatureRequired(header string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeSignatureRequired,
		Message: "the signature header " + header + " is required",
		Details: map[string]any{"field": header}}
}

// InvalidSignature: an inbound webhook's signature does not match, or its
// source is unknown (401). Both cases answer the same, so a caller cannot
// learn which shops exist.
func InvalidSignature() *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeInvalidSignature,
		Message: "the signature does not match"}
}

// InvalidSignatureHint is InvalidSignature with a hint on the form of the
// request (header names, the signature's encoding) in the message and
// details.hint. The hint must come from the request alone, never from a
// secret or from whether the source exists.
func InvalidSignatureHint(hint string) *Error {
	e := InvalidSignature()
	e.Message += ": " + hint
	e.Details = map[string]any{"hint": hint}
	return e
}

// BearerSchemeMissing: an Authorization header that is not
// "Bearer <token>" (401 invalid_token), e.g. the token alone.
func BearerSchemeMissing() *Error {
	return &Error{Status: http.StatusUnauthorized, Code: CodeInvalidToken,
		Message: `the Authorization header must be "Bearer <token>": the Bearer scheme is missing (or the token after it)`}
}

func internalError() *Error {
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal,
		Message: "an internal error occurred; quote the request id when reporting it"}
}
