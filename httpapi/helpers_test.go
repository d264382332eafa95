package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/httpapi"
)

// logSink collects zerolog lines and lets a test wait for one.
type logSink struct {
	mu     sync.Mutex
	lines  []map[string]any
	raw    bytes.Buffer
	notify chan struct{}
}

func newLogSink() *logSink { return &logSink{notify: make(chan struct{})} }

func (s *logSink) Write(p []byte) (int, error) {
	var m map[string]any
	if err := json.Unmarshal(p, &m); err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.lines = append(s.lines, m)
	s.raw.Write(p)
	close(s.notify)
	s.notify = make(chan struct{})
	s.mu.Unlock()
	return len(p), nil
}

// wait returns the first line matching match, waiting up to 5 s for it.
func (s *logSink) wait(t *testing.T, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		s.mu.Lock()
		for _, l := range s.lines {
			if match(l) {
				s.mu.Unlock()
				return l
			}
		}
		ch := s.notify
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no log line %s within 5s; log:\n%s", what, s.text())
			return nil
		}
	}
}

func (s *logSink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw.String()
}

// accessLine waits for the access-log line of the request with id.
func (s *logSink) accessLine(t *testing.T, id string) map[string]any {
	t.Helper()
	return s.wait(t, "access line of "+id, func(l map[string]any) bool {
		return l["message"] == "request" && l["request_id"] == id
	})
}

type env struct {
	srv     *httptest.Server
	logs    *logSink
	reg     *prometheus.Registry
	router  *mux.Router
	handler http.Handler
}

type envOption func(*httpapi.StackConfig)

func withRegistry(reg *prometheus.Registry) envOption {
	return func(c *httpapi.StackConfig) { c.Registry = reg }
}

func withTrustedProxies(p ...string) envOption {
	return func(c *httpapi.StackConfig) {
		for _, s := range p {
			c.TrustedProxies = append(c.TrustedProxies, netip.MustParsePrefix(s))
		}
	}
}

// newEnv serves a NewRouter, with routes added by register, behind a Stack
// over real HTTP.
func newEnv(t *testing.T, register func(r *mux.Router), opts ...envOption) *env {
	t.Helper()
	logs := newLogSink()
	reg := prometheus.NewRegistry()
	cfg := httpapi.StackConfig{Logger: zerolog.New(logs).Level(zerolog.DebugLevel), Registry: reg}
	for _, o := range opts {
		o(&cfg)
	}
	stack, err := httpapi.NewStack(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := httpapi.NewRouter()
	if register != nil {
		register(r)
	}
	h := stack.Wrap(r)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{srv: srv, logs: logs, reg: cfg.Registry, router: r, handler: h}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (e *env) do(t *testing.T, method, path string, body string, header ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

type errorDoc struct {
	Error struct {
		Code      string         `json:"code"`
		Message   string         `json:"message"`
		Details   map[string]any `json:"details"`
		RequestID string         `json:"request_id"`
	} `json:"error"`
}

// errorOf checks the envelope's invariants and returns it.
func errorOf(t *testing.T, r response) errorDoc {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	for _, k := range []string{"code", "message", "details", "request_id"} {
		if _, ok := raw["error"][k]; !ok {
			t.Errorf("error envelope lacks %s: %s", k, r.body)
		}
	}
	var doc errorDoc
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Error.Details == nil {
		t.Errorf("details is not an object: %s", r.body)
	}
	if !strings.HasPrefix(doc.Error.RequestID, "req_") {
		t.Errorf("request_id = %q, want req_…", doc.Error.RequestID)
	}
	if h := r.header.Get("X-Request-Id"); h != doc.Error.RequestID {
		t.Errorf("X-Request-Id = %q, body request_id = %q", h, doc.Error.RequestID)
	}
	return doc
}
