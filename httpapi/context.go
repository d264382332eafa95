package httpapi

import (
	"context"

	"github.com/rs/zerolog"
)

type stateKey struct{}

// requestState is what the Stack learns about a request while it is served.
// It is created by the outermost middleware and filled in by the router
// (route template); all of it happens on the request's goroutine before the
// outer middleware reads it back.
type requestState struct {
	id    string
	route string // mux path template; "" until a route matched
	// code is the error.code of an error answer, for the access log.
	code string
	// fields are key/value pairs handlers add to the access log line.
	fields []string
}

// AddLogFields adds key/value pairs (kv: key, value, key, value…) to the
// request's access-log line, e.g. a webhook's topic and delivery id. Only
// identifiers belong there: never secrets, signatures, bodies or personal
// data. Outside a request it does nothing.
func AddLogFields(ctx context.Context, kv ...string) {
	if st := stateFrom(ctx); st != nil {
		st.fields = append(st.fields, kv...)
	}
}

func withState(ctx context.Context, st *requestState) context.Context {
	return context.WithValue(ctx, stateKey{}, st)
}

func stateFrom(ctx context.Context) *requestState {
	st, _ := ctx.Value(stateKey{}).(*requestState)
	return st
}

// RequestID returns the request id (req_…) the Stack assigned to the request
// ctx belongs to, or "" outside a request.
func RequestID(ctx context.Context) string {
	if st := stateFrom(ctx); st != nil {
		return st.id
	}
	return ""
}

// Logger returns the request-scoped logger (it carries request_id), or a
// disabled logger outside a request. Never log tokens, signatures, bodies or
// personal data with it.
func Logger(ctx context.Context) *zerolog.Logger {
	return zerolog.Ctx(ctx)
}
