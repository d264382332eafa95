package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// CheckFunc reports whether a dependency can serve: nil when it can. It must
// honour ctx, which ends after the Checks timeout.
type CheckFunc func(ctx context.Context) error

// Checks is the set of named readiness checks behind /readyz. It is safe for
// concurrent use; checks may be added while serving.
type Checks struct {
	timeout time.Duration
	mu      sync.RWMutex
	names   []string
	funcs   []CheckFunc
}

// NewChecks returns an empty set whose checks each get at most timeout
// (2 s when timeout is not positive).
func NewChecks(timeout time.Duration) *Checks {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &Checks{timeout: timeout}
}

// Add registers a named check ("eventlog", "vault", "redis"). A second check
// with the same name replaces the first.
func (c *Checks) Add(name string, fn CheckFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(c.names, name); i >= 0 {
		c.funcs[i] = fn
		return
	}
	c.names = append(c.names, name)
	c.funcs = append(c.funcs, fn)
}

// CheckFailure is a failed readiness check.
type CheckFailure struct {
	Name string
	Err  error
}

// Run runs every check concurrently, each with the timeout, and returns the
// failures in registration order. A check that does not return within the
// timeout fails; its goroutine exits when the check returns.
func (c *Checks) Run(ctx context.Context) []CheckFailure {
	c.mu.RLock()
	names := slices.Clone(c.names)
	funcs := slices.Clone(c.funcs)
	c.mu.RUnlock()

	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	results := make([]chan error, len(funcs))
	for i, fn := range funcs {
		results[i] = make(chan error, 1) // buffered: a late check never blocks
		go func() {
			results[i] <- runCheck(ctx, fn)
		}()
	}
	var failed []CheckFailure
	for i, ch := range results {
		var err error
		select {
		case err = <-ch:
		case <-ctx.Done():
			select {
			case err = <-ch: // finished at the same moment
			default:
				err = fmt.Errorf("check did not finish: %w", ctx.Err())
			}
		}
		if err != nil {
			failed = append(failed, CheckFailure{Name: names[i], Err: err})
		}
	}
	return failed
}

func runCheck(ctx context.Context, fn CheckFunc) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("check panicked: %v", v)
		}
	}()
	return fn(ctx)
}

// RegisterOps registers the operational endpoints on r, as beta routes:
//
//   - GET /healthz: liveness, always 200 {"status":"ok"} while the process
//     serves;
//   - GET /readyz: runs checks; 200 {"status":"ok"} when all pass, else 503
//     unavailable whose details.failing_checks names the failing checks
//     (their errors go to the log only);
//   - GET /metrics: the Prometheus exposition of reg (skipped when reg is
//     nil). Expose the router to operators only (a separate listener or a
//     proxy rule) if metrics must stay private.
func RegisterOps(r *mux.Router, checks *Checks, reg *prometheus.Registry) {
	HandleFunc(r, Beta, http.MethodGet, "/healthz", func(w http.ResponseWriter, req *http.Request) {
		writeJSON(w, req, http.StatusOK, map[string]string{"status": "ok"})
	})
	HandleFunc(r, Beta, http.MethodGet, "/readyz", func(w http.ResponseWriter, req *http.Request) {
		var failed []CheckFailure
		if checks != nil {
			failed = checks.Run(req.Context())
		}
		if len(failed) == 0 {
			writeJSON(w, req, http.StatusOK, map[string]string{"status": "ok"})
			return
		}
		names := make([]string, len(failed))
		for i, f := range failed {
			names[i] = f.Name
			Logger(req.Context()).Warn().Str("check", f.Name).Err(f.Err).Msg("readiness check failed")
		}
		e := Unavailable(DefaultRetryAfter)
		e.Message = "the service is not ready"
		e.Details = map[string]any{"failing_checks": names}
		WriteError(w, req, e)
	})
	if reg != nil {
		Handle(r, Beta, http.MethodGet, "/metrics", MetricsHandler(reg))
	}
}

// MetricsHandler serves reg in the Prometheus exposition format. It never
// touches the global registry.
func MetricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		Registry:           reg, // promhttp_metric_handler_errors_total goes to reg too
		ErrorHandling:      promhttp.ContinueOnError,
		DisableCompression: true, // the Stack compresses
	})
}
