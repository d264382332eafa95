package email_test

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// envelope is one mail transaction a relay accepted.
type envelope struct {
	from, helo, user, mech string
	to                     []string
	data                   []byte
	tls                    bool
}

// relay is go-smtp's server with a backend that records what it receives.
type relay struct {
	mu       sync.Mutex
	sessions int
	received []envelope
	rcptErr  error
}

func (r *relay) snapshot() (sessions int, received []envelope) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions, append([]envelope(nil), r.received...)
}

type session struct {
	r    *relay
	conn *smtp.Conn
	env  envelope
}

func (s *session) Reset()        { s.env = envelope{user: s.env.user, mech: s.env.mech} }
func (s *session) Logout() error { return nil }
func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	s.env.from = from
	return nil
}
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.r.mu.Lock()
	err := s.r.rcptErr
	s.r.mu.Unlock()
	if err != nil {
		return err
	}
	s.env.to = append(s.env.to, to)
	return nil
}
func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if pass != "relay-password" {
			return smtp.ErrAuthFailed
		}
		s.env.user, s.env.mech = user, mech
		return nil
	}), nil
}
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.env.data = b
	_, s.env.tls = s.conn.TLSConnectionState()
	s.env.helo = s.conn.Hostname()
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.received = append(s.r.received, s.env)
	return nil
}

// startRelay serves a relay on host:0 (host "127.0.0.1" unless given);
// with a server TLS configuration it offers STARTTLS.
func startRelay(t testing.TB, serverTLS *tls.Config) (*relay, string) {
	t.Helper()
	r := &relay{}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		r.mu.Lock()
		r.sessions++
		r.mu.Unlock()
		return &session{r: r, conn: c}, nil
	}))
	srv.Domain = "relay.test"
	srv.ErrorLog = log.New(io.Discard, "", 0) // dropped connections are the tests' doing
	srv.TLSConfig = serverTLS
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	// Closing the listener too: a Close that runs before Serve registered
	// it would leave Serve accepting forever.
	t.Cleanup(func() { _ = srv.Close(); _ = ln.Close(); <-done })
	return r, ln.Addr().String()
}

// testCerts returns a server TLS configuration with a self-signed
// certificate (httptest's, valid for example.com) and a client one that
// trusts it.
func testCerts(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(ts.Close)
	roots := ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	return &tls.Config{Certificates: ts.TLS.Certificates}, &tls.Config{RootCAs: roots, ServerName: "example.com"}
}
