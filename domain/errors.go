package domain

import (
	"errors"
	"fmt"
)

// Code classifies a failure. The HTTP edge maps each code to a status and an
// error.code string exactly once (see httpapi); nothing else inspects it.
type Code string

// Failure codes shared by every layer.
const (
	// CodeInvalid: the input breaks a rule; Field names the offending field.
	CodeInvalid Code = "validation_failed"
	// CodeNotFound: the resource does not exist or belongs to another shop.
	CodeNotFound Code = "not_found"
	// CodeConflict: the resource is not in a state that allows the operation.
	CodeConflict Code = "conflict"
	// CodeForbidden: the caller may not do this.
	CodeForbidden Code = "forbidden"
	// CodeUnavailable: a required store cannot take the operation now.
	CodeUnavailable Code = "unavailable"
	// CodeCreditsExhausted: the shop's AI credits for the month cannot
	// cover the operation; the cause is a *CreditShortfall.
	CodeCreditsExhausted Code = "credits_exhausted"
)

// Error is a meaningful domain failure. Use errors.As to inspect it.
type Error struct {
	Code    Code
	Field   string // the offending field, for CodeInvalid
	Message string // safe to show to a client: never personal data or secrets
	Err     error  // optional cause, not shown to clients
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + msg
	}
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", msg, e.Err)
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Invalid reports a validation failure on field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// NotFound reports a missing resource of the given kind ("customer", …).
func NotFound(kind string) *Error {
	return &Error{Code: CodeNotFound, Message: kind + " not found"}
}

// Conflict reports an operation the resource's state does not allow.
func Conflict(format string, args ...any) *Error {
	return &Error{Code: CodeConflict, Message: fmt.Sprintf(format, args...)}
}

// Forbidden reports an operation the caller may not perform.
func Forbidden(format string, args ...any) *Error {
	return &Error{Code: CodeForbidden, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or "".
func ErrorCode(err error) Code {
	var de *Error
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}
