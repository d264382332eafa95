package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// DefaultMaxWaitForPosition is the default bound of every wait for a
// position: HeaderWaitForPosition, read-your-writes, a write's read-back.
// The server's bound is configurable (cgp serve --max-wait-for-position);
// WithMaxWait puts it in each request's context.
const DefaultMaxWaitForPosition = 5 * time.Second

type maxWaitKey struct{}

// WithMaxWait makes d the bound of every wait for a position made while
// serving a request (see MaxWait). A d of zero or less keeps the default.
func WithMaxWait(d time.Duration, next http.Handler) http.Handler {
	if d <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), maxWaitKey{}, d)))
	})
}

// MaxWait returns the bound of a wait for a position made for the request
// whose context is ctx: the one WithMaxWait set, else
// DefaultMaxWaitForPosition.
func MaxWait(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(maxWaitKey{}).(time.Duration); ok {
		return d
	}
	return DefaultMaxWaitForPosition
}

// WaitForPosition honours HeaderWaitForPosition: when the request names a
// position, it calls wait with it under a MaxWait deadline. A malformed
// value is 400 invalid_parameter; a read model still behind at the
// deadline is 503 with Retry-After, so a client never mistakes stale data
// for its own write. Without the header it does nothing.
func WaitForPosition(r *http.Request, wait func(ctx context.Context, pos uint64) error) error {
	v := r.Header.Get(HeaderWaitForPosition)
	if v == "" || wait == nil {
		return nil
	}
	pos, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return InvalidParameter(HeaderWaitForPosition, "must be a non-negative integer position")
	}
	return WaitBounded(r.Context(), pos, wait)
}

// WaitBounded calls wait with pos under the MaxWait deadline of ctx; a
// wait that runs out is 503 unavailable with Retry-After.
func WaitBounded(ctx context.Context, pos uint64, wait func(ctx context.Context, pos uint64) error) error {
	ctx, cancel := context.WithTimeout(ctx, MaxWait(ctx))
	defer cancel()
	if err := wait(ctx, pos); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Unavailable(time.Second)
		}
		return err
	}
	return nil
}
