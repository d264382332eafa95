package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/felixge/httpsnoop"
	"github.com/gorilla/handlers"
	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/domain"
)

// StackConfig configures the middleware every request passes through.
type StackConfig struct {
	// Logger is the base logger; each request gets a child with request_id.
	Logger zerolog.Logger
	// Registry receives the HTTP metrics (requests total and duration by
	// route template, method and status). Nil disables them.
	Registry *prometheus.Registry
	// TrustedProxies are the peers whose X-Forwarded-For, X-Real-IP,
	// Forwarded, X-Forwarded-Proto and X-Forwarded-Host headers are believed.
	// Empty: none is, and those headers are stripped.
	TrustedProxies []netip.Prefix
	// NewRequestID makes request ids; nil uses domain.NewID(domain.PrefixRequest).
	NewRequestID func() string
}

// Stack is the middleware chain of the service, from the outside in:
//
//  1. trusted proxy headers (only from TrustedProxies);
//  2. request id (X-Request-Id), request-scoped logger, one access-log line
//     and the HTTP metrics per request;
//  3. panic recovery (handlers.RecoveryHandler): the panic is logged without
//     the request body and the client gets the 500 error envelope.
//
// The access log holds method, route template, status, bytes, duration_ms,
// request_id, error_code of an error answer and the fields handlers added
// with AddLogFields (a webhook's topic and delivery_id), at info level
// (/healthz and /readyz at debug while they answer below 500): never the raw path, the query string, headers, bodies or the
// client address, which can carry tokens and personal data.
type Stack struct {
	cfg     StackConfig
	metrics *httpMetrics
}

// NewStack validates cfg and registers the HTTP metrics on cfg.Registry.
func NewStack(cfg StackConfig) (*Stack, error) {
	for _, p := range cfg.TrustedProxies {
		if !p.IsValid() {
			return nil, fmt.Errorf("trusted proxy prefix %q is invalid", p)
		}
	}
	if cfg.NewRequestID == nil {
		cfg.NewRequestID = func() string { return domain.NewID(domain.PrefixRequest) }
	}
	s := &Stack{cfg: cfg}
	if cfg.Registry != nil {
		m, err := newHTTPMetrics(cfg.Registry)
		if err != nil {
			return nil, err
		}
		s.metrics = m
	}
	return s, nil
}

// Wrap returns h, usually the router from NewRouter with its routes
// registered, behind the whole stack.
func (s *Stack) Wrap(h http.Handler) http.Handler {
	return trustedProxies(s.cfg.TrustedProxies, s.observe(recovery(h)))
}

// Compressed wraps a route whose responses are large (lists, documents) in
// gzip/deflate compression (handlers.CompressHandler). It is applied per
// route, not to the whole stack: a compressor costs more to set up than it
// saves on the small single-resource and webhook answers that make up most
// traffic. It compresses with gzip at BestSpeed (klauspost/compress
// gzhttp: pooled writers, a faster deflate), answers of less than 1 KiB
// as they are: JSON pages shrink nearly as much as at the default level
// for a fraction of the CPU, which a server answering many list pages
// spends on nothing else (a new writer per answer, as gorilla's handler
// makes, cost a tenth of a list page's time).
func Compressed(h http.Handler) http.Handler { return gzipped(h) }

var gzipped = func() func(http.Handler) http.HandlerFunc {
	w, err := gzhttp.NewWrapper(gzhttp.CompressionLevel(gzip.BestSpeed), gzhttp.MinSize(1024))
	if err != nil {
		panic(fmt.Sprintf("gzip wrapper: %v", err)) // constant options: a programming error
	}
	return w
}()

// observe assigns the request id, marks the answer not to be stored by
// caches, puts the request logger in the context,
// and records the access log line and metrics once the request is done (also
// when the connection is aborted by a panic of http.ErrAbortHandler).
func (s *Stack) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := &requestState{id: s.cfg.NewRequestID()}
		log := s.cfg.Logger.With().Str("request_id", st.id).Logger()
		ctx := log.WithContext(withState(r.Context(), st))
		w.Header().Set(HeaderRequestID, st.id)
		// Answers may hold personal data: no browser or proxy keeps a copy
		// that an erasure could not reach. A handler may say otherwise.
		w.Header().Set("Cache-Control", "no-store")

		rec := &responseRecord{}
		defer func() {
			v := recover()
			s.record(&log, st, r.Method, rec, time.Since(start), v != nil)
			if v != nil {
				panic(v)
			}
		}()
		next.ServeHTTP(rec.wrap(w), r.WithContext(ctx))
	})
}

func (s *Stack) record(log *zerolog.Logger, st *requestState, method string, rec *responseRecord, d time.Duration, aborted bool) {
	route := st.route
	if route == "" {
		route = "unmatched"
	}
	method = metricMethod(method)
	status := rec.status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http sends 200
	}
	level := zerolog.InfoLevel
	if (route == "/healthz" || route == "/readyz") && status < 500 {
		level = zerolog.DebugLevel // probes every few seconds drown the log
	}
	ev := log.WithLevel(level).
		Str("method", method).
		Str("route", route).
		Int("status", status).
		Int64("bytes", rec.bytes).
		Float64("duration_ms", Milliseconds(d))
	if st.code != "" {
		ev = ev.Str("error_code", st.code)
	}
	for i := 0; i+1 < len(st.fields); i += 2 {
		ev = ev.Str(st.fields[i], st.fields[i+1])
	}
	if aborted {
		ev = ev.Bool("aborted", true)
	}
	ev.Msg("request")
	if s.metrics != nil {
		s.metrics.observe(route, method, status, d)
	}
}

// Milliseconds is d in milliseconds, for log fields named …_ms.
func Milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// responseRecord captures the status and the bytes written.
type responseRecord struct {
	status int
	bytes  int64
}

func (rec *responseRecord) wrap(w http.ResponseWriter) http.ResponseWriter {
	return httpsnoop.Wrap(w, httpsnoop.Hooks{
		WriteHeader: func(next httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc {
			return func(code int) {
				if rec.status == 0 && code >= 200 {
					rec.status = code
				}
				next(code)
			}
		},
		Write: func(next httpsnoop.WriteFunc) httpsnoop.WriteFunc {
			return func(b []byte) (int, error) {
				if rec.status == 0 {
					rec.status = http.StatusOK
				}
				n, err := next(b)
				rec.bytes += int64(n)
				return n, err
			}
		},
		ReadFrom: func(next httpsnoop.ReadFromFunc) httpsnoop.ReadFromFunc {
			return func(src io.Reader) (int64, error) {
				if rec.status == 0 {
					rec.status = http.StatusOK
				}
				n, err := next(src)
				rec.bytes += n
				return n, err
			}
		},
	})
}

// metricMethod bounds the method label: anything non-standard is "OTHER".
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg *prometheus.Registry) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "cgp", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests served, by route template, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "cgp", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "Time to serve HTTP requests, by route template, method and status.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2, 5, 10},
		}, []string{"route", "method", "status"}),
	}
	if err := reg.Register(m.requests); err != nil {
		return nil, fmt.Errorf("register http requests metric: %w", err)
	}
	if err := reg.Register(m.duration); err != nil {
		return nil, fmt.Errorf("register http duration metric: %w", err)
	}
	return m, nil
}

func (m *httpMetrics) observe(route, method string, status int, d time.Duration) {
	code := strconv.Itoa(status)
	m.requests.WithLabelValues(route, method, code).Inc()
	m.duration.WithLabelValues(route, method, code).Observe(d.Seconds())
}

// recovery turns a panic into a logged error and a 500 envelope, through
// handlers.RecoveryHandler. RecoveryHandler itself only writes a bare 500
// status; the writer below replaces that status with the envelope when the
// response has not started yet.
func recovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw := &panicState{r: r}
		marked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					pw.panicked = true
					pw.startedAtPanic = pw.started
					pw.aborted = v == http.ErrAbortHandler //nolint:errorlint // a sentinel panic value, not a returned error
					panic(v)
				}
			}()
			next.ServeHTTP(w, r)
		})
		rh := handlers.RecoveryHandler(
			handlers.RecoveryLogger(panicLogger{state: pw}),
			handlers.PrintRecoveryStack(false), // panicLogger records the stack itself
		)(marked)
		rh.ServeHTTP(pw.wrap(w), r)
		if pw.aborted || pw.panicked && pw.startedAtPanic {
			// http.ErrAbortHandler asks the server to cut the connection:
			// pass it on now that RecoveryHandler has swallowed it. A panic
			// after the response started cuts it too, so the client sees a
			// broken response rather than a truncated one that looks whole.
			panic(http.ErrAbortHandler)
		}
	})
}

// panicState tracks, for one request, whether the response has started and
// whether the handler panicked.
type panicState struct {
	r              *http.Request
	started        bool
	panicked       bool
	startedAtPanic bool
	aborted        bool
}

func (p *panicState) wrap(w http.ResponseWriter) http.ResponseWriter {
	return httpsnoop.Wrap(w, httpsnoop.Hooks{
		WriteHeader: func(next httpsnoop.WriteHeaderFunc) httpsnoop.WriteHeaderFunc {
			return func(code int) {
				if p.panicked {
					// The bare 500 of RecoveryHandler.
					if !p.started && !p.aborted {
						p.started = true
						writeErrorEnvelope(w, p.r, internalError())
					}
					return
				}
				if code >= 200 {
					p.started = true
				}
				next(code)
			}
		},
		Write: func(next httpsnoop.WriteFunc) httpsnoop.WriteFunc {
			return func(b []byte) (int, error) {
				p.started = true
				return next(b)
			}
		},
		ReadFrom: func(next httpsnoop.ReadFromFunc) httpsnoop.ReadFromFunc {
			return func(src io.Reader) (int64, error) {
				p.started = true
				return next(src)
			}
		},
	})
}

// panicLogger adapts the request logger to handlers.RecoveryHandlerLogger.
// It logs the panic value and the stack, never the request (body, headers or
// query may hold tokens and personal data).
type panicLogger struct{ state *panicState }

func (l panicLogger) Println(v ...any) {
	if l.state.aborted {
		return
	}
	Logger(l.state.r.Context()).Error().
		Str("panic", fmt.Sprint(v...)).
		Str("stack", string(debug.Stack())).
		Msg("handler panicked")
}
