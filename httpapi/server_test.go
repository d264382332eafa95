package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/httpapi"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

type runResult struct{ err error }

// startServer runs s until the returned cancel is called; the result
// arrives on the channel once Run returns.
func startServer(t *testing.T, s *httpapi.Server) (context.CancelFunc, <-chan runResult) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done, stopped := make(chan runResult, 1), make(chan struct{})
	go func() {
		done <- runResult{s.Run(ctx)}
		close(stopped)
	}()
	select {
	case <-s.Ready():
	case res := <-done:
		t.Fatalf("Run returned before listening: %v", res.err)
	case <-time.After(5 * time.Second):
		t.Fatal("server not ready within 5s")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	return cancel, done
}

func waitRun(t *testing.T, done <-chan runResult) error {
	t.Helper()
	select {
	case res := <-done:
		return res.err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s")
		return nil
	}
}

// waitUntil polls cond every few milliseconds until it holds or 5 s pass.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within 5s", what)
		}
	}
}

func TestServerDrainsInFlightThenRunsHooks(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		_, _ = io.WriteString(w, "done "+r.URL.Path)
		finished.Store(r.URL.Path == "/slow" || finished.Load())
	})
	ln := listen(t)
	s, err := httpapi.NewServer(httpapi.ServerConfig{Listener: ln, Handler: h, Logger: zerolog.Nop(), ShutdownGrace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	s.OnShutdown(func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("hook context has no deadline")
		}
		order = append(order, "flush")
		if !finished.Load() {
			t.Error("hook ran before the in-flight request finished")
		}
		return nil
	})
	s.OnShutdown(func(context.Context) error { order = append(order, "close"); return nil })
	cancel, done := startServer(t, s)
	url := "http://" + s.Addr().String()

	if resp, err := http.Get(url + "/fast"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("fast request: %v", err)
	} else {
		resp.Body.Close()
	}

	type result struct {
		body string
		err  error
	}
	slow := make(chan result, 1)
	go func() {
		resp, err := http.Get(url + "/slow")
		if err != nil {
			slow <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		slow <- result{string(b), err}
	}()
	<-entered
	cancel()
	// New connections are refused once shutdown has begun.
	waitUntil(t, "listener closed", func() bool {
		c, err := net.Dial("tcp", s.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	close(release)
	if res := <-slow; res.err != nil || res.body != "done /slow" {
		t.Fatalf("in-flight request: %q %v", res.body, res.err)
	}
	if err := waitRun(t, done); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if strings.Join(order, ",") != "flush,close" {
		t.Errorf("hooks ran as %v", order)
	}
}

func TestServerGraceExpires(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	})
	s, err := httpapi.NewServer(httpapi.ServerConfig{Listener: listen(t), Handler: h, Logger: zerolog.Nop(),
		ShutdownGrace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var hookRan atomic.Bool
	s.OnShutdown(func(context.Context) error { hookRan.Store(true); return errors.New("flush failed") })
	cancel, done := startServer(t, s)
	clientErr := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + s.Addr().String() + "/stuck")
		if err == nil {
			resp.Body.Close()
		}
		clientErr <- err
	}()
	<-entered
	cancel()
	err = waitRun(t, done)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run = %v, want the drain deadline", err)
	}
	if err == nil || !strings.Contains(err.Error(), "flush failed") || !hookRan.Load() {
		t.Errorf("hook error not reported or hook not run: %v", err)
	}
	if err := <-clientErr; err == nil {
		t.Error("the stuck request's connection was not closed")
	}
}

func TestServerListensOnAddr(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hi") })
	s, err := httpapi.NewServer(httpapi.ServerConfig{Addr: "127.0.0.1:0", Handler: h, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr() != nil {
		t.Error("Addr before Run")
	}
	cancel, done := startServer(t, s)
	resp, err := http.Get("http://" + s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hi" {
		t.Errorf("body %q", b)
	}
	cancel()
	if err := waitRun(t, done); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err == nil {
		t.Error("second Run accepted")
	}
}

func TestServerListenFailureStillRunsHooks(t *testing.T) {
	ln := listen(t)
	defer ln.Close()
	s, err := httpapi.NewServer(httpapi.ServerConfig{Addr: ln.Addr().String(), Handler: http.NotFoundHandler(), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	var hookRan bool
	s.OnShutdown(func(context.Context) error { hookRan = true; return nil })
	if err := s.Run(context.Background()); err == nil || !hookRan {
		t.Fatalf("Run on a taken port = %v (hook ran %v)", err, hookRan)
	}
}

func TestServerTimeoutsAndHeaderLimit(t *testing.T) {
	s, err := httpapi.NewServer(httpapi.ServerConfig{Listener: listen(t), Handler: http.NotFoundHandler(), Logger: zerolog.Nop(),
		ReadHeaderTimeout: 100 * time.Millisecond, MaxHeaderBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	startServer(t, s)

	// A client that never finishes its headers is cut off.
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("slow headers: connection not closed by the server: %v", err)
	}

	// Oversized headers are refused.
	c2, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_, _ = io.WriteString(c2, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 16<<10)+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized headers: %d", resp.StatusCode)
	}
}

func TestServerConfigValidate(t *testing.T) {
	_, err := httpapi.NewServer(httpapi.ServerConfig{})
	if err == nil || !strings.Contains(err.Error(), "handler") || !strings.Contains(err.Error(), "addr") {
		t.Fatalf("err = %v, want both problems", err)
	}
}

func TestServerErrorLogMasksClientAddresses(t *testing.T) {
	logs := newLogSink()
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("raw handler boom") })
	s, err := httpapi.NewServer(httpapi.ServerConfig{Listener: listen(t), Handler: h, Logger: zerolog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	startServer(t, s)
	if resp, err := http.Get("http://" + s.Addr().String() + "/"); err == nil {
		resp.Body.Close()
	}
	line := logs.wait(t, "net/http panic line", func(l map[string]any) bool {
		return l["component"] == "net/http" && strings.Contains(l["message"].(string), "raw handler boom")
	})
	msg := line["message"].(string)
	if strings.Contains(msg, "127.0.0.1") || !strings.Contains(msg, "<addr>") {
		t.Errorf("client address not masked: %.200s", msg)
	}
}
