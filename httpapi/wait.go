package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// MaxWaitForPosition bounds how long a request waits for HeaderWaitForPosition.
const MaxWaitForPosition = 5 * time.Second

// WaitForPosition honours HeaderWaitForPosition: when the request names a
// position, it calls wait with it under a MaxWaitForPosition deadline. A
// malformed value is 400 invalid_parameter; a read model still behind at
// the deadline is 503 with Retry-After, so a client never mistakes stale
// data for its own write. Without the header it does nothing.
func WaitForPosition(r *http.Request, wait func(ctx context.Context, pos uint64) error) error {
	v := r.Header.Get(HeaderWaitForPosition)
	if v == "" || wait == nil {
		return nil
	}
	pos, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return InvalidParameter(HeaderWaitForPosition, "must be a non-negative integer position")
	}
	ctx, cancel := context.WithTimeout(r.Context(), MaxWaitForPosition)
	defer cancel()
	if err := wait(ctx, pos); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Unavailable(time.Second)
		}
		return err
	}
	return nil
}
