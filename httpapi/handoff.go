package httpapi

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Handoff shares one listening socket between servers that run one after
// the other: the server that answers while the service starts, then the
// service itself. Connections are accepted once, by Handoff, and handed to
// whichever view is accepting; closing a view stops only that view, so the
// socket never closes between the two and no client is refused.
type Handoff struct {
	ln    net.Listener
	conns chan net.Conn
	done  chan struct{} // closed when the socket's Accept failed
	err   error         // Accept's error, set before done closes
	once  sync.Once
}

// NewHandoff starts accepting on ln.
func NewHandoff(ln net.Listener) *Handoff {
	h := &Handoff{ln: ln, conns: make(chan net.Conn), done: make(chan struct{})}
	go h.accept()
	return h
}

func (h *Handoff) accept() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			h.err = err
			close(h.done)
			return
		}
		h.conns <- c // a view takes it, or Close drains it
	}
}

// View returns a listener serving the accepted connections until it is
// closed. With owner set, closing the view also closes the socket.
func (h *Handoff) View(owner bool) net.Listener {
	return &handoffView{h: h, owner: owner, closed: make(chan struct{})}
}

// Close closes the socket; connections accepted but not yet taken by a
// view are closed.
func (h *Handoff) Close() error {
	var err error
	h.once.Do(func() {
		err = h.ln.Close()
		go func() {
			for {
				select {
				case c := <-h.conns:
					c.Close()
				case <-h.done:
					return
				}
			}
		}()
	})
	return err
}

type handoffView struct {
	h      *Handoff
	owner  bool
	closed chan struct{}
	once   sync.Once
}

func (v *handoffView) Accept() (net.Conn, error) {
	select {
	case c := <-v.h.conns:
		return c, nil
	case <-v.closed:
		return nil, net.ErrClosed
	case <-v.h.done:
		return nil, v.h.err
	}
}

func (v *handoffView) Close() error {
	v.once.Do(func() { close(v.closed) })
	if v.owner {
		return v.h.Close()
	}
	return nil
}

func (v *handoffView) Addr() net.Addr { return v.h.ln.Addr() }

// Starting is the handler of a service that is not serving yet (it builds
// its read models): GET /healthz answers 200 (the process is alive),
// /readyz and every other path 503 unavailable with Retry-After, whose
// details.starting says what the service is doing and
// details.failing_checks names the readiness check that fails meanwhile
// (StartingCheck), as /readyz's 503 always does.
func Starting(what string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
			return
		}
		e := Unavailable(startingRetryAfter)
		e.Message = "the service is starting: " + what
		e.Details = map[string]any{"starting": what, "failing_checks": []string{StartingCheck}}
		WriteError(w, r, e)
	})
}

// StartingCheck is the readiness check that fails while the service starts.
const StartingCheck = "initial_build"

// startingRetryAfter is the Retry-After of the answers while starting.
const startingRetryAfter = 5 * time.Second
