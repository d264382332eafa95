package readapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/images/runner"
	"github.com/cgp-platform/cgp/images/store"
	"github.com/cgp-platform/cgp/projections/imageops"
)

// Images serves the reads of the image-operations API: the operations of
// the key's shop, one operation, and its result.
type Images struct {
	q       *imageops.Queries
	auth    *auth.Authenticator
	keys    auth.ImageKeyFinder
	store   store.Store
	cursors *httpapi.CursorCodec
	wait    Waiter
}

// NewImages returns the image reads.
func NewImages(q *imageops.Queries, a *auth.Authenticator, keys auth.ImageKeyFinder, st store.Store, cursors *httpapi.CursorCodec,
	wait Waiter) *Images {
	return &Images{q: q, auth: a, keys: keys, store: st, cursors: cursors, wait: wait}
}

// ImageListSpec is the allow-list of GET /api/v1/images (newest first).
var ImageListSpec = httpapi.ListSpec{
	Resource: "images",
	Filters: map[string]httpapi.FilterKind{
		"operation": httpapi.EnumFilter(domain.CreditKinds()...), "status": httpapi.EnumFilter(domain.ImageStatuses()...),
	},
	Sorts:       []string{"created_at"},
	DefaultSort: "-created_at",
}

// Routes registers the image reads: images:read with an image-API key.
func (m *Images) Routes(r *mux.Router) {
	read := func(h http.HandlerFunc) http.Handler {
		return httpapi.Beta(m.auth.RequireImageKey(m.keys, domain.ImageScopeImagesRead, h))
	}
	r.Handle("/api/v1/images", read(m.handleList)).Methods(http.MethodGet)
	r.Handle("/api/v1/images/{id}", read(m.handleGet)).Methods(http.MethodGet)
	r.Handle("/api/v1/images/{id}/result", read(m.handleResult)).Methods(http.MethodGet)
}

func imageShop(r *http.Request) string {
	k, _ := auth.ImageKeyFromContext(r.Context())
	return k.ShopID
}

func (m *Images) handleList(w http.ResponseWriter, r *http.Request) {
	shop := imageShop(r)
	ServeKeysetMeta(w, r, m.cursors, m.wait, imageops.Name, ImageListSpec,
		func(params httpapi.ListParams, after *imageops.Key) ([]httpapi.Resource, *imageops.Key, error) {
			if !params.Sort.Desc {
				return nil, nil, domain.Invalid("sort", "image operations are listed newest first (sort=-created_at)")
			}
			rows, next, err := m.q.List(r.Context(), imageops.Filter{ShopID: shop, Kind: params.Filters["operation"],
				Status: params.Filters["status"], After: after, Limit: params.Limit})
			items := make([]httpapi.Resource, len(rows))
			for i := range rows {
				items[i] = ImageResource(&rows[i])
			}
			return items, next, err
		}, nil)
}

func (m *Images) handleGet(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	ServeOne(w, r, m.wait, imageops.Name, imageShop(r),
		func(ctx context.Context, shop string) (*imageops.Operation, error) { return m.q.Get(ctx, shop, id) },
		ImageResource)
}

// handleResult streams a succeeded operation's image. It is immutable: its
// ETag is its digest, and If-None-Match answers 304.
func (m *Images) handleResult(w http.ResponseWriter, r *http.Request) {
	if err := WaitForPosition(r, m.wait, imageops.Name); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	op, err := m.q.Get(r.Context(), imageShop(r), mux.Vars(r)["id"])
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if op.Status != domain.ImageStatusSucceeded || op.Result == nil {
		httpapi.WriteError(w, r, domain.Conflict("the operation is %s: it has no result", op.Status))
		return
	}
	etag := `"` + op.Result.Digest + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "private, max-age=86400, immutable")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	rc, err := m.store.Get(r.Context(), op.ShopID, runner.ResultKey(op.ID))
	if domain.ErrorCode(err) == domain.CodeNotFound {
		w.Header().Del("ETag")
		w.Header().Del("Cache-Control")
		httpapi.WriteError(w, r, &httpapi.Error{Status: http.StatusGone, Code: "gone",
			Message: fmt.Sprintf("the result was removed: results are kept %s after the operation", ResultRetentionText)})
		return
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	defer rc.Close()
	ext := op.Result.Format
	if ext == "jpeg" {
		ext = "jpg"
	}
	w.Header().Set("Content-Type", "image/"+op.Result.Format)
	w.Header().Set("Content-Length", strconv.FormatInt(op.Result.Size, 10))
	w.Header().Set("Content-Disposition", `inline; filename="`+op.ID+"."+ext+`"`)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = io.Copy(w, rc)
	}
}

// ResultRetentionText says how long results are kept, for messages.
var ResultRetentionText = "30 days"

// ImageAttributes are an image operation's attributes in the API.
type ImageAttributes struct {
	Operation      string            `json:"operation"`
	Status         string            `json:"status"`
	CreditsCharged int               `json:"credits_charged"`
	Options        map[string]string `json:"options"`
	Input          domain.ImageRef   `json:"input"`
	Result         *ImageResult      `json:"result"`
	Engine         string            `json:"engine"`
	Metadata       map[string]string `json:"metadata"`
	Error          *ImageError       `json:"error"`
	Attempts       int               `json:"attempts"`
	CreatedAt      time.Time         `json:"created_at"`
	StartedAt      *time.Time        `json:"started_at"`
	FinishedAt     *time.Time        `json:"finished_at"`
	Timings        ImageTimings      `json:"timings"`
}

// ImageResult is a succeeded operation's image and where to get it.
type ImageResult struct {
	domain.ImageRef
	ContentType string `json:"content_type"`
	URL         string `json:"url"`
}

// ImageError is why an operation failed.
type ImageError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ImageTimings are an operation's durations in milliseconds: waiting in
// the queue, running (the engine, of the attempt that succeeded) and in
// all; null until known.
type ImageTimings struct {
	QueueMS *int64 `json:"queue_ms"`
	RunMS   *int64 `json:"run_ms"`
	TotalMS *int64 `json:"total_ms"`
}

// ImageResource renders an operation. Credits are charged (reserved)
// while it runs and spent when it succeeds; a failed operation charged
// nothing.
func ImageResource(o *imageops.Operation) httpapi.Resource {
	a := ImageAttributes{Operation: o.Kind, Status: o.Status, CreditsCharged: o.Credits, Options: o.Options, Input: o.Input,
		Engine: o.Engine, Metadata: o.Metadata, Attempts: o.Attempts, CreatedAt: o.RequestedAt,
		StartedAt: zeroTimeAsNull(o.StartedAt), FinishedAt: zeroTimeAsNull(o.FinishedAt)}
	if a.Options == nil {
		a.Options = map[string]string{}
	}
	if a.Metadata == nil {
		a.Metadata = map[string]string{}
	}
	if o.Status == domain.ImageStatusFailed {
		a.CreditsCharged = 0
		a.Error = &ImageError{Code: o.FailureCode, Message: o.Failure}
	}
	if o.Result != nil && o.Status == domain.ImageStatusSucceeded {
		a.Result = &ImageResult{ImageRef: *o.Result, ContentType: "image/" + o.Result.Format,
			URL: "/api/v1/images/" + o.ID + "/result"}
		run := o.RunMillis
		a.Timings.RunMS = &run
	}
	ms := func(from, to time.Time) *int64 {
		if from.IsZero() || to.IsZero() {
			return nil
		}
		v := max(0, to.Sub(from).Milliseconds())
		return &v
	}
	a.Timings.QueueMS = ms(o.RequestedAt, o.StartedAt)
	a.Timings.TotalMS = ms(o.RequestedAt, o.FinishedAt)
	return httpapi.Resource{ID: o.ID, Type: "image_operation", Attributes: a}
}
