package readapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
)

// Read-your-writes headers: a write answers with HeaderPosition, the global
// position its events reached; a GET that sends HeaderWaitFor waits (at most
// MaxWait) until the read models it reads have reached that position.
const (
	HeaderPosition = httpapi.HeaderEventPosition
	HeaderWaitFor  = httpapi.HeaderWaitForPosition
	MaxWait        = 5 * time.Second
)

// WaitForPosition honours HeaderWaitFor. A malformed value is a 400; a read
// model still behind after MaxWait is a 503 with Retry-After, so a client
// never mistakes stale data for its own write.
func WaitForPosition(r *http.Request, w Waiter, projectors ...string) error {
	v := r.Header.Get(HeaderWaitFor)
	if v == "" {
		return nil
	}
	pos, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return httpapi.InvalidParameter(HeaderWaitFor, "must be a non-negative integer position")
	}
	ctx, cancel := context.WithTimeout(r.Context(), MaxWait)
	defer cancel()
	if err := w.WaitFor(ctx, eventlog.Position(pos), projectors...); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return httpapi.Unavailable(time.Second)
		}
		return err
	}
	return nil
}
