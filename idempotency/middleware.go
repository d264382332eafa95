package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cgp-platform/cgp/httpapi"
)

// Defaults of Options.
const (
	// DefaultMaxRequestBytes is the default Options.MaxRequestBytes, 1 MiB.
	DefaultMaxRequestBytes = 1 << 20
	// DefaultMaxResponseBytes is the default Options.MaxResponseBytes, 1 MiB.
	DefaultMaxResponseBytes = 1 << 20
	// DefaultStoreTimeout is the default Options.StoreTimeout.
	DefaultStoreTimeout = 10 * time.Second
)

// DefaultReplayHeaders returns the response headers stored and replayed by
// default: the representation headers, Location, and X-Event-Position (so
// that a replayed write still lets the client wait for its position).
// Per-request headers (X-Request-Id, rate-limit headers, the stability
// label) are not: the replaying request sets its own.
func DefaultReplayHeaders() []string {
	return []string{
		"Content-Type",
		"Content-Language",
		"Location",
		"ETag",
		"Last-Modified",
		"X-Content-Type-Options",
		httpapi.HeaderEventPosition,
	}
}

// Options configures Middleware. The zero value takes every default.
type Options struct {
	// MaxRequestBytes bounds the request body read to fingerprint it. A
	// larger body answers 413 payload_too_large before anything is claimed.
	// Set it to at least the limit the handlers enforce. Default 1 MiB.
	MaxRequestBytes int64
	// MaxResponseBytes bounds the body of a stored response. A larger
	// response is streamed to the client as it is written, not stored, and
	// its key released (a retry runs the request again). Default 1 MiB.
	MaxResponseBytes int
	// ReplayHeaders lists the response headers stored and replayed.
	// Default DefaultReplayHeaders().
	ReplayHeaders []string
	// Storable decides from the final status and headers whether a
	// response is stored (true) or its key released (false). Default
	// DefaultStorable.
	Storable func(status int, header http.Header) bool
	// Sealer, when set, seals the stored body of every answer its handler
	// marked with SealAnswer (those that show a secret once: a new token,
	// a signing secret) and opens it for a replay, so the store never
	// keeps such a secret in clear. Other bodies are stored as they are,
	// so that an erasure's Forget finds the ones that name an erased
	// customer.
	Sealer Sealer
	// StoreTimeout bounds Complete and Release after the handler returned.
	// They run even when the client went away, since the work is done.
	// Default 10 s.
	StoreTimeout time.Duration
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if o.MaxRequestBytes < 0 {
		errs = append(errs, errors.New("max request bytes must not be negative"))
	}
	if o.MaxResponseBytes < 0 {
		errs = append(errs, errors.New("max response bytes must not be negative"))
	}
	if o.StoreTimeout < 0 {
		errs = append(errs, errors.New("store timeout must not be negative"))
	}
	for _, h := range o.ReplayHeaders {
		if h == "" {
			errs = append(errs, errors.New("replay headers must not hold an empty name"))
			break
		}
	}
	return errors.Join(errs...)
}

func (o *Options) setDefaults() {
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.ReplayHeaders == nil {
		o.ReplayHeaders = DefaultReplayHeaders()
	}
	canonical := make([]string, len(o.ReplayHeaders))
	for i, h := range o.ReplayHeaders {
		canonical[i] = http.CanonicalHeaderKey(h)
	}
	o.ReplayHeaders = canonical
	if o.Storable == nil {
		o.Storable = DefaultStorable
	}
	if o.StoreTimeout == 0 {
		o.StoreTimeout = DefaultStoreTimeout
	}
}

// DefaultStorable stores the responses of requests that did their work or
// whose outcome a retry would only repeat: 2xx and 3xx, and 409 (the
// resource's state forbids the operation) unless the 409 carries
// Retry-After, which says that a retry may succeed. Everything else
// releases the key: 400, 401, 402, 403, 404, 405, 413, 415, 422 and 429
// answer a request that failed before any work (validation, authentication,
// limits), and a 5xx may be retried with the same key.
func DefaultStorable(status int, header http.Header) bool {
	switch {
	case status >= 200 && status < 400:
		return true
	case status == http.StatusConflict:
		return header.Get(httpapi.HeaderRetryAfter) == ""
	}
	return false
}

// Middleware applies the Idempotency-Key contract to the handlers it wraps;
// put it on the POST and PATCH routes, inside authentication, so that scope
// can name the caller (usually the token id). For each request:
//
//   - a safe method (GET, HEAD, OPTIONS, TRACE), no Idempotency-Key header,
//     or no scope (scope answers false) passes through untouched;
//   - a malformed key answers 400 invalid_parameter (field
//     Idempotency-Key), a body over Options.MaxRequestBytes 413;
//   - otherwise the body is read and fingerprinted, the key claimed with
//     store.Begin, and: Replay writes the stored response with
//     Idempotent-Replayed: true; Mismatch answers 409
//     idempotency_key_reused; InProgress 409 idempotency_key_in_use (with
//     Retry-After: 1); a store failure 503 unavailable;
//   - Started runs next with the body restored and its response captured.
//     A storable response (Options.Storable) is completed durably before it
//     is sent, so that a client that saw it can always have it replayed;
//     any other response, a response over Options.MaxResponseBytes, and a
//     panic of next release the key.
//
// The store's lease must exceed the longest time next may run (the server's
// write timeout): past it, another server may take the key over and run the
// request too; this one's Complete then fails with ErrClaimLost.
//
// When Complete fails (store down, claim lost) the response is still sent
// and the failure logged; the key then stays claimed until its lease passes,
// so that a quick retry gets 409 in_use rather than a second execution.
// The key and the bodies are never logged. Middleware panics when opts is
// invalid (see Options.Validate), at wiring time.
func Middleware(store Store, scope func(*http.Request) (string, bool), opts Options) func(http.Handler) http.Handler {
	if err := opts.Validate(); err != nil {
		panic(fmt.Sprintf("idempotency middleware: %v", err))
	}
	if store == nil || scope == nil {
		panic("idempotency middleware: store and scope are required")
	}
	opts.setDefaults()
	return func(next http.Handler) http.Handler {
		return &middleware{store: store, scope: scope, opts: opts, next: next}
	}
}

type middleware struct {
	store Store
	scope func(*http.Request) (string, bool)
	opts  Options
	next  http.Handler
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		m.next.ServeHTTP(w, r)
		return
	}
	key, present, err := ParseKey(r.Header)
	if !present {
		m.next.ServeHTTP(w, r)
		return
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	scope, ok := m.scope(r)
	if !ok {
		m.next.ServeHTTP(w, r)
		return
	}
	body, err := m.readBody(w, r)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	claim, err := m.store.Begin(r.Context(), scope, key, Fingerprint(r.Method, r.URL.RequestURI(), body))
	if err != nil {
		m.storeFailed(w, r, err)
		return
	}
	switch claim.Outcome {
	case Replay:
		if m.opts.Sealer != nil {
			body, err := m.opts.Sealer.Open(claim.Response.Body)
			if err != nil {
				httpapi.WriteError(w, r, err)
				return
			}
			claim.Response.Body = body
		}
		m.replay(w, claim.Response)
	case Mismatch:
		httpapi.WriteError(w, r, httpapi.IdempotencyKeyReused())
	case InProgress:
		e := httpapi.IdempotencyKeyInUse()
		e.RetryAfter = time.Second
		httpapi.WriteError(w, r, e)
	case Started:
		if claim.TakenOver {
			httpapi.Logger(r.Context()).Info().Msg("idempotency: took over a claim whose lease had passed")
		}
		m.run(w, r, claim)
	default:
		m.storeFailed(w, r, fmt.Errorf("begin answered unknown %v", claim.Outcome))
	}
}

// readBody reads the whole body, bounded, and puts a copy back for next.
func (m *middleware) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, m.opts.MaxRequestBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, httpapi.PayloadTooLarge(m.opts.MaxRequestBytes)
		}
		return nil, &httpapi.Error{Status: http.StatusBadRequest, Code: httpapi.CodeInvalidJSON,
			Message: "the request body could not be read"}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// storeFailed answers a failed Begin: 503 when the store is unavailable;
// WriteError's own mapping for a request whose client went away (503,
// logged at info) and for invalid arguments (a wiring bug: 500).
func (m *middleware) storeFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ErrInvalid) || r.Context().Err() != nil {
		httpapi.WriteError(w, r, fmt.Errorf("idempotency begin: %w", err))
		return
	}
	httpapi.Logger(r.Context()).Warn().Err(err).Msg("idempotency: store failed")
	httpapi.WriteError(w, r, httpapi.Unavailable(httpapi.DefaultRetryAfter))
}

func (m *middleware) replay(w http.ResponseWriter, resp Response) {
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = append([]string(nil), vs...)
	}
	h.Del("Content-Length")
	h.Set(HeaderReplayed, "true")
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body) // a failed write means the client is gone
}

// run executes next for a Started claim and ends the claim.
func (m *middleware) run(w http.ResponseWriter, r *http.Request, claim Claim) {
	cw := &captureWriter{w: w, max: m.opts.MaxResponseBytes}
	before := w.Header().Clone()
	ended := false
	defer func() {
		if ended {
			return
		}
		// next panicked: nothing was stored, so let a retry run again. The
		// panic goes on to the recovery middleware, which answers on a
		// header map rid of what the handler set (unless the response was
		// streamed already).
		m.end(r, func(ctx context.Context) error { return m.store.Release(ctx, claim) }, "release after panic")
		if !cw.streaming {
			h := w.Header()
			clear(h)
			for k, vs := range before {
				h[k] = vs
			}
		}
	}()
	m.next.ServeHTTP(cw, r)
	ended = true

	status, header := cw.finalStatus(), cw.finalHeader()
	if cw.streaming || !m.opts.Storable(status, header) {
		m.end(r, func(ctx context.Context) error { return m.store.Release(ctx, claim) }, "release")
		cw.flush()
		return
	}
	resp := Response{Status: status, Header: m.selectHeaders(header), Body: cw.buf.Bytes()}
	if m.opts.Sealer != nil && cw.seal {
		sealed, err := m.opts.Sealer.Seal(resp.Body)
		if err != nil {
			m.end(r, func(ctx context.Context) error { return m.store.Release(ctx, claim) }, "release")
			cw.flush()
			return
		}
		resp.Body = sealed
	}
	m.end(r, func(ctx context.Context) error { return m.store.Complete(ctx, claim, resp) }, "complete")
	cw.flush()
}

// end runs a Complete or Release detached from the client's cancellation,
// bounded by StoreTimeout, and logs its failure: the response goes out
// regardless.
func (m *middleware) end(r *http.Request, op func(context.Context) error, what string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), m.opts.StoreTimeout)
	defer cancel()
	if err := op(ctx); err != nil {
		ev := httpapi.Logger(r.Context()).Warn().Err(err)
		if errors.Is(err, ErrClaimLost) {
			ev = ev.Bool("claim_lost", true)
		}
		ev.Str("op", what).Msg("idempotency: could not end claim")
	}
}

func (m *middleware) selectHeaders(h http.Header) http.Header {
	out := make(http.Header, len(m.opts.ReplayHeaders))
	for _, k := range m.opts.ReplayHeaders {
		if vs := h[k]; len(vs) > 0 {
			out[k] = append([]string(nil), vs...)
		}
	}
	return out
}

// captureWriter buffers the response of a Started request, up to max bytes
// of body; past that it switches to streaming what it holds and all that
// follows to w. Headers are set on w's header map directly; as net/http
// does, the ones that count are those present when the status was written,
// which the writer snapshots then and restores on flush.
type captureWriter struct {
	// seal is set by SealAnswer: the stored copy is sealed.
	seal      bool
	w         http.ResponseWriter
	max       int
	status    int
	header    http.Header // snapshot taken with the status
	buf       bytes.Buffer
	streaming bool
}

func (c *captureWriter) Header() http.Header { return c.w.Header() }

func (c *captureWriter) WriteHeader(code int) {
	if c.status != 0 || code < 200 {
		// A second status is ignored, as net/http does; 1xx informational
		// responses are dropped, since nothing is sent before the claim
		// ends.
		return
	}
	c.status = code
	c.header = c.w.Header().Clone()
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if c.streaming {
		return c.w.Write(b)
	}
	if c.buf.Len()+len(b) <= c.max {
		return c.buf.Write(b)
	}
	c.streaming = true
	c.restoreHeader()
	c.w.WriteHeader(c.status)
	if _, err := c.w.Write(c.buf.Bytes()); err != nil {
		return 0, err
	}
	c.buf = bytes.Buffer{}
	return c.w.Write(b)
}

// finalHeader is the header map as it was when the status was written.
func (c *captureWriter) finalHeader() http.Header {
	if c.status == 0 {
		return c.w.Header() // nothing written: net/http would send it as it is
	}
	return c.header
}

func (c *captureWriter) finalStatus() int {
	if c.status == 0 {
		return http.StatusOK
	}
	return c.status
}

func (c *captureWriter) restoreHeader() {
	if c.status == 0 {
		return
	}
	h := c.w.Header()
	clear(h)
	for k, vs := range c.header {
		h[k] = vs
	}
}

// flush sends the buffered response, unless it was streamed already.
func (c *captureWriter) flush() {
	if c.streaming {
		return
	}
	c.restoreHeader()
	c.w.WriteHeader(c.finalStatus())
	if c.buf.Len() > 0 {
		_, _ = c.w.Write(c.buf.Bytes()) // a failed write means the client is gone
	}
}

// SealAnswer marks the answer being written to w as one that shows a
// secret once: when the request carries an Idempotency-Key, the copy
// stored for its replays is sealed (Options.Sealer). It does nothing for
// a request without the header.
func SealAnswer(w http.ResponseWriter) {
	if cw, ok := w.(*captureWriter); ok {
		cw.seal = true
	}
}
