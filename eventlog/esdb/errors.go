package esdb

import (
	"context"
	"errors"
	"fmt"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cgp-platform/cgp/eventlog"
)

// esdbCode returns the code of the first *es.Error in err's chain. The
// client's own es.FromError is not used: it reports ok=false for every
// non-nil error and only looks at the outermost error, so wrapped errors
// (the client itself wraps with %w, e.g. "could not construct append
// operation. Reason: %w") would be misread.
func esdbCode(err error) (es.ErrorCode, bool) {
	var e *es.Error
	if errors.As(err, &e) {
		return e.Code(), true
	}
	return 0, false
}

// hasCode reports whether err's chain holds an *es.Error with code c.
func hasCode(err error, c es.ErrorCode) bool {
	code, ok := esdbCode(err)
	return ok && code == c
}

// isWrongExpectedVersion reports an optimistic-concurrency conflict.
func isWrongExpectedVersion(err error) bool {
	return hasCode(err, es.ErrorCodeWrongExpectedVersion)
}

// isNotFound reports a stream (or metadata stream) that does not exist.
func isNotFound(err error) bool {
	return hasCode(err, es.ErrorCodeResourceNotFound)
}

// isConnectionClosed reports a client whose connection state machine has
// stopped: after a failed node discovery the client refuses every further
// call, so the adapter replaces it.
func isConnectionClosed(err error) bool {
	return hasCode(err, es.ErrorCodeConnectionClosed)
}

// isTransient reports failures worth retrying later: the node is down, not
// the leader, overloaded, or the connection broke. Subscriptions resubscribe
// after them; other operations report them as eventlog.ErrUnavailable.
func isTransient(err error) bool {
	if code, ok := esdbCode(err); ok {
		switch code {
		case es.ErrorUnavailable, es.ErrorCodeConnectionClosed, es.ErrorCodeDeadlineExceeded,
			es.ErrorCodeNotLeader, es.ErrorAborted:
			return true
		}
	}
	// Subscriptions report drops with the raw gRPC error, and an
	// ErrorCodeUnknown *es.Error may wrap one: look at the gRPC status too.
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.ResourceExhausted:
			return true
		}
	}
	return false
}

// isPermanent reports failures that retrying cannot fix: authentication,
// authorisation, unsupported requests. A subscription ends on them instead of
// resubscribing; every other drop is retried with backoff.
func isPermanent(err error) bool {
	if code, ok := esdbCode(err); ok {
		switch code {
		case es.ErrorCodeUnauthenticated, es.ErrorCodeAccessDenied, es.ErrorCodeUnsupportedFeature,
			es.ErrorCodeStreamDeleted, es.ErrorCodeParsing:
			return true
		}
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unauthenticated, codes.PermissionDenied, codes.Unimplemented, codes.InvalidArgument:
			return true
		}
	}
	return false
}

// wrapErr gives err the operation's context. When ctx has ended the cause
// is returned instead (context.Canceled, context.DeadlineExceeded, or
// eventlog.ErrClosed when the Log was closed); transient failures also match
// eventlog.ErrUnavailable.
func wrapErr(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, context.Cause(ctx))
	}
	if isTransient(err) {
		return fmt.Errorf("%s: %w: %w", op, eventlog.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isInvalidPosition reports a read or subscription of $all the server
// refused because its start is not the position of a record. The server
// answers that with codes.InvalidArgument, and every other argument of the
// adapter's $all requests is fixed and valid.
func isInvalidPosition(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.InvalidArgument
}
