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

// Read-your-writes headers (see httpapi.WaitForPosition; the bound of
// every wait is httpapi.MaxWait).
const (
	HeaderPosition = httpapi.HeaderEventPosition
	HeaderWaitFor  = httpapi.HeaderWaitForPosition
)

// WaitForPosition honours X-Wait-For-Position for the read models of the
// named projectors.
func WaitForPosition(r *http.Request, w Waiter, projectors ...string) error {
	return httpapi.WaitForPosition(r, func(ctx context.Context, pos uint64) error {
		return w.WaitFor(ctx, eventlog.Position(pos), projectors...)
	})
}

// ServeOne answers the GET of one resource of the caller's shop: it
// validates `include` against rels, honours X-Wait-For-Position for
// projector's read model (and those of the included relations), loads the
// row (a row of another shop is not found) and writes it with render,
// with the included resources.
func ServeOne[T any](w http.ResponseWriter, r *http.Request, wait Waiter, projector string, shop string,
	load func(ctx context.Context, shop string) (T, error), render func(T) httpapi.Resource, rels ...Relation) {
	include, err := httpapi.ParseInclude(r, relationNames(rels))
	if err == nil {
		err = WaitForPosition(r, wait, includeProjectors(projector, include, rels)...)
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	row, err := load(r.Context(), shop)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	items := []httpapi.Resource{render(row)}
	included, err := embed(r.Context(), include, rels, items)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	httpapi.WriteCompound(w, r, http.StatusOK, items[0], included)
}

// ServeWritten answers a write with the resource it changed, read back from
// projector's read model once that reached the command's position
// (bounded by httpapi.MaxWait), with the position in X-Event-Position. When the
// read model is slower than that, the row it has is shown with the
// validated change applied by pending; when it has no row yet, the answer
// is 503 (the change itself is durable).
func ServeWritten[T any](w http.ResponseWriter, r *http.Request, wait Waiter, projector string, pos eventlog.Position, status int,
	load func(ctx context.Context) (T, error), pending func(T), render func(T) httpapi.Resource) {
	ctx, cancel := context.WithTimeout(r.Context(), httpapi.MaxWait(r.Context()))
	defer cancel()
	waitErr := wait.WaitFor(ctx, pos, projector)
	if waitErr != nil && !errors.Is(waitErr, context.DeadlineExceeded) {
		httpapi.WriteError(w, r, waitErr)
		return
	}
	row, err := load(r.Context())
	if err != nil {
		if waitErr != nil {
			err = httpapi.Unavailable(time.Second)
		}
		httpapi.WriteError(w, r, err)
		return
	}
	if waitErr != nil && pending != nil {
		pending(row)
	}
	w.Header().Set(HeaderPosition, strconv.FormatUint(uint64(pos), 10))
	httpapi.WriteResource(w, r, status, render(row))
}

// ServeKeyset answers a keyset-paginated list of projector's read model:
// it validates the query against spec (whose include values are rels'),
// honours X-Wait-For-Position, lets load read the rows after the cursor's
// key (of type K), embeds the included relations and writes the list with
// the cursor of the next page.
func ServeKeyset[K any](w http.ResponseWriter, r *http.Request, cursors *httpapi.CursorCodec, wait Waiter, projector string,
	spec httpapi.ListSpec, load func(httpapi.ListParams, *K) ([]httpapi.Resource, *K, error), rels ...Relation) {
	ServeKeysetMeta(w, r, cursors, wait, projector, spec, load, nil, rels...)
}

// ServeKeysetMeta is ServeKeyset with the list's top-level meta, read by
// meta (when not nil) after the page.
func ServeKeysetMeta[K any](w http.ResponseWriter, r *http.Request, cursors *httpapi.CursorCodec, wait Waiter, projector string,
	spec httpapi.ListSpec, load func(httpapi.ListParams, *K) ([]httpapi.Resource, *K, error),
	meta func(ctx context.Context) (map[string]any, error), rels ...Relation) {
	spec.Includes = relationNames(rels)
	params, err := httpapi.ParseList(r, spec, cursors)
	if err == nil {
		err = WaitForPosition(r, wait, includeProjectors(projector, params.Include, rels)...)
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	var after *K
	if params.Cursor != nil {
		after = new(K)
		if err := params.Cursor.Decode(after); err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
	}
	items, next, err := load(params, after)
	pg := httpapi.Page{}
	if err == nil {
		pg.Included, err = embed(r.Context(), params.Include, rels, items)
	}
	if err == nil && next != nil {
		pg.NextCursor, err = params.NextCursor(next)
	}
	if err == nil && meta != nil {
		pg.Meta, err = meta(r.Context())
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	httpapi.WriteList(w, r, items, pg)
}
