// Package smtptest runs a real SMTP server (emersion/go-smtp) on
// loopback that records every message it accepts, for the tests and
// benchmarks of the code that sends mail. It is a server the code under
// test talks SMTP to, not a stand-in for our own code.
//
// It imports the standard library and emersion/go-smtp.
package smtptest

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// Message is one mail transaction the server accepted.
type Message struct {
	From string
	To   []string
	Data []byte
	TLS  bool
}

// Server is a recording SMTP server.
type Server struct {
	// Addr is host:port to relay through.
	Addr string

	srv  *smtp.Server
	ln   net.Listener
	done chan struct{}

	mu       sync.Mutex
	received []Message
	count    int
	keep     bool
	rcptErr  error
	changed  chan struct{}
}

// Options configure Start.
type Options struct {
	// TLS, when set, makes the server offer STARTTLS.
	TLS *tls.Config
	// CountOnly keeps only the number of messages (benchmarks).
	CountOnly bool
}

// Start serves on 127.0.0.1:0 until Close.
func Start(o Options) (*Server, error) {
	s := &Server{keep: !o.CountOnly, changed: make(chan struct{}), done: make(chan struct{})}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &session{s: s, conn: c}, nil }))
	s.srv.Domain = "relay.test"
	s.srv.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.TLSConfig = o.TLS
	s.srv.MaxRecipients = 10
	s.srv.ReadTimeout, s.srv.WriteTimeout = time.Minute, time.Minute
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.ln, s.Addr = ln, ln.Addr().String()
	go func() { defer close(s.done); _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error {
	err := errors.Join(s.srv.Close(), s.ln.Close())
	<-s.done
	return err
}

// RefuseRecipients makes RCPT TO answer err (nil: accept again).
func (s *Server) RefuseRecipients(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcptErr = err
}

// Messages returns what was accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.received...)
}

// Count is the number of messages accepted so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// WaitCount waits until at least n messages were accepted, at most until
// ctx ends.
func (s *Server) WaitCount(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		c, ch := s.count, s.changed
		s.mu.Unlock()
		if c >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

type session struct {
	s    *Server
	conn *smtp.Conn
	msg  Message
}

func (x *session) Reset()        { x.msg = Message{} }
func (x *session) Logout() error { return nil }
func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	x.msg.From = from
	return nil
}
func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.s.mu.Lock()
	err := x.s.rcptErr
	x.s.mu.Unlock()
	if err != nil {
		return err
	}
	x.msg.To = append(x.msg.To, to)
	return nil
}
func (x *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	x.msg.Data = b
	_, x.msg.TLS = x.conn.TLSConnectionState()
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	if x.s.keep {
		x.s.received = append(x.s.received, x.msg)
	}
	x.s.count++
	close(x.s.changed)
	x.s.changed = make(chan struct{})
	return nil
}
