package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// ServerConfig configures a Server. Zero durations and sizes take the
// defaults named on each field.
type ServerConfig struct {
	// Addr is the TCP address to listen on ("127.0.0.1:8080"; port 0 picks
	// a free port). Ignored when Listener is set.
	Addr string
	// Listener, when set, is served instead of listening on Addr; Run
	// closes it.
	Listener net.Listener
	// Handler serves every request, usually Stack.Wrap(router).
	Handler http.Handler
	// Logger receives server-level events (start, shutdown, connection
	// errors of net/http).
	Logger zerolog.Logger

	// ReadHeaderTimeout bounds reading the request headers (default 5 s).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading the whole request (default 30 s).
	ReadTimeout time.Duration
	// WriteTimeout bounds writing the response, counted from the end of
	// the headers (default 60 s).
	WriteTimeout time.Duration
	// IdleTimeout bounds keep-alive idle time (default 120 s).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request headers (default 64 KiB).
	MaxHeaderBytes int
	// ShutdownGrace is how long in-flight requests may run once shutdown
	// starts before their connections are closed (default 20 s).
	ShutdownGrace time.Duration
	// HookTimeout bounds each OnShutdown hook (default 30 s).
	HookTimeout time.Duration
}

func (c *ServerConfig) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ReadHeaderTimeout, 5*time.Second)
	def(&c.ReadTimeout, 30*time.Second)
	def(&c.WriteTimeout, 60*time.Second)
	def(&c.IdleTimeout, 120*time.Second)
	def(&c.ShutdownGrace, 20*time.Second)
	def(&c.HookTimeout, 30*time.Second)
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = 64 << 10
	}
}

// Validate reports every problem of the configuration at once.
func (c ServerConfig) Validate() error {
	var errs []error
	if c.Handler == nil {
		errs = append(errs, errors.New("handler is required"))
	}
	if c.Listener == nil && c.Addr == "" {
		errs = append(errs, errors.New("addr or listener is required"))
	}
	return errors.Join(errs...)
}

// Server serves HTTP until its context ends, then drains in-flight requests
// and runs the shutdown hooks.
type Server struct {
	cfg   ServerConfig
	ready chan struct{}

	mu    sync.Mutex
	hooks []func(context.Context) error
	addr  net.Addr
	ran   bool
}

// NewServer validates cfg and applies its defaults.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("http server config: %w", err)
	}
	cfg.setDefaults()
	return &Server{cfg: cfg, ready: make(chan struct{})}, nil
}

// OnShutdown registers fn to run after in-flight requests are drained (or
// the grace period ran out), in registration order, each with its own
// HookTimeout context; e.g. flushing the event log.
func (s *Server) OnShutdown(fn func(ctx context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, fn)
}

// Ready is closed once the server listens; Addr is valid from then on.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr is the address the server listens on, nil before Ready.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Run listens and serves until ctx ends, then stops accepting connections,
// lets in-flight requests finish within ShutdownGrace (closing what is left
// after it), and runs the OnShutdown hooks. Request contexts are not derived
// from ctx: an in-flight request is not cancelled by the shutdown. Run
// returns nil after a clean shutdown, or the joined errors of serving,
// draining and the hooks. It may be called once.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return errors.New("http server: Run called twice")
	}
	s.ran = true
	s.mu.Unlock()

	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Addr); err != nil {
			return errors.Join(fmt.Errorf("listen on %s: %w", s.cfg.Addr, err), s.runHooks())
		}
	}
	s.mu.Lock()
	s.addr = ln.Addr()
	s.mu.Unlock()

	srv := &http.Server{
		Handler:           s.cfg.Handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          log.New(serverLogWriter{s.cfg.Logger}, "", 0),
	}
	served := make(chan error, 1)
	go func() { // exits when srv is shut down or closed below
		served <- srv.Serve(ln)
	}()
	s.cfg.Logger.Info().Str("addr", ln.Addr().String()).Msg("http server listening")
	close(s.ready)

	var errs []error
	select {
	case err := <-served:
		errs = append(errs, fmt.Errorf("serve: %w", err))
		_ = srv.Close()
	case <-ctx.Done():
		s.cfg.Logger.Info().Float64("grace_ms", Milliseconds(s.cfg.ShutdownGrace)).Msg("http server draining")
		drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownGrace)
		err := srv.Shutdown(drainCtx)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("drain in-flight requests: %w", err))
			_ = srv.Close()
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("serve: %w", err))
		}
	}
	errs = append(errs, s.runHooks())
	s.cfg.Logger.Info().Msg("http server stopped")
	return errors.Join(errs...)
}

func (s *Server) runHooks() error {
	s.mu.Lock()
	hooks := append([]func(context.Context) error(nil), s.hooks...)
	s.mu.Unlock()
	var errs []error
	for i, fn := range hooks {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.HookTimeout)
		if err := fn(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shutdown hook %d: %w", i, err))
		}
		cancel()
	}
	return errors.Join(errs...)
}

// serverLogWriter routes net/http's own messages (TLS handshake errors,
// connection errors, …) to zerolog, with client addresses masked: they are
// personal data.
type serverLogWriter struct{ log zerolog.Logger }

// addrPattern matches IPv4 and bracketed or bare IPv6 addresses, with an
// optional port.
var addrPattern = regexp.MustCompile(`\[[0-9A-Fa-f:.%\w]*:[0-9A-Fa-f:.%\w]*\](:\d+)?|\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b|\b[0-9A-Fa-f]{0,4}(:[0-9A-Fa-f]{0,4}){2,7}\b`)

func (w serverLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	msg = addrPattern.ReplaceAllString(msg, "<addr>")
	w.log.Warn().Str("component", "net/http").Msg(msg)
	return len(p), nil
}
