package readapi

import (
	"context"
	"net/http"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
)

// Read-your-writes headers and bound (see httpapi.WaitForPosition).
const (
	HeaderPosition = httpapi.HeaderEventPosition
	HeaderWaitFor  = httpapi.HeaderWaitForPosition
	MaxWait        = httpapi.MaxWaitForPosition
)

// WaitForPosition honours X-Wait-For-Position for the read models of the
// named projectors.
func WaitForPosition(r *http.Request, w Waiter, projectors ...string) error {
	return httpapi.WaitForPosition(r, func(ctx context.Context, pos uint64) error {
		return w.WaitFor(ctx, eventlog.Position(pos), projectors...)
	})
}
