package httpapi_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/httpapi"
)

// TestHandoffServesAcrossServers: a client hammering one socket while the
// starting server hands it over to the service is answered every time,
// first by one then by the other, and closing the owner's view closes the
// socket.
func TestHandoffServesAcrossServers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.NewHandoff(ln)
	url := "http://" + ln.Addr().String() + "/api/v1/customers"
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() int {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	first := &http.Server{Handler: httpapi.Starting("building")}
	firstDone := make(chan error, 1)
	go func() { firstDone <- first.Serve(h.View(false)) }()
	if st := get(); st != http.StatusServiceUnavailable {
		t.Fatalf("starting server answered %d", st)
	}
	// Between the two servers a connection waits in the socket's backlog.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-firstDone; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("first server: %v", err)
	}
	answered := make(chan int, 1)
	go func() {
		resp, err := client.Get(url)
		if err != nil {
			answered <- -1
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	second := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })}
	owner := h.View(true)
	secondDone := make(chan error, 1)
	go func() { secondDone <- second.Serve(owner) }()
	if st := <-answered; st != http.StatusTeapot {
		t.Fatalf("request sent between the servers: %d", st)
	}
	if st := get(); st != http.StatusTeapot {
		t.Fatalf("service answered %d", st)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	<-secondDone
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second); err == nil {
		c.Close()
		t.Fatal("the socket accepts after the owner closed it")
	}
}

// TestStartingAnswers: /healthz is alive, everything else 503 with the
// envelope and Retry-After.
func TestStartingAnswers(t *testing.T) {
	h := httpapi.Starting("building the read models")
	for _, c := range []struct {
		method, path string
		status       int
	}{{"GET", "/healthz", 200}, {"GET", "/readyz", 503}, {"POST", "/webhooks/events", 503}, {"GET", "/api/v1/customers", 503}, {"POST", "/healthz", 503}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.status {
			t.Fatalf("%s %s: %d", c.method, c.path, rec.Code)
		}
		if c.status == 503 && (rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), `"code":"`+httpapi.CodeUnavailable+`"`) ||
			!strings.Contains(rec.Body.String(), `"failing_checks":["`+httpapi.StartingCheck+`"]`)) {
			t.Fatalf("%s %s: %v %s", c.method, c.path, rec.Header(), rec.Body)
		}
	}
}
