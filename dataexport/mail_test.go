package dataexport_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/cgp-platform/cgp/dataexport"
)

// relay is a go-smtp server recording what it receives.
type relay struct {
	mu      sync.Mutex
	data    [][]byte
	tls     []bool
	users   []string
	rcptErr error
}

type relaySession struct {
	r    *relay
	conn *smtp.Conn
	user string
}

func (s *relaySession) Reset()                                    {}
func (s *relaySession) Logout() error                             { return nil }
func (s *relaySession) Mail(string, *smtp.MailOptions) error      { return nil }
func (s *relaySession) Rcpt(to string, _ *smtp.RcptOptions) error { return s.r.rcptErr }
func (s *relaySession) AuthMechanisms() []string                  { return []string{sasl.Plain} }
func (s *relaySession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if pass != "relay-password" {
			return errors.New("bad password")
		}
		s.user = user
		return nil
	}), nil
}
func (s *relaySession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.data, s.r.tls, s.r.users = append(s.r.data, b), append(s.r.tls, isTLS), append(s.r.users, s.user)
	return nil
}

// startRelay serves a relay on 127.0.0.1:0; with cert it offers STARTTLS.
func startRelay(t *testing.T, cert *tls.Config) (*relay, string) {
	t.Helper()
	r := &relay{}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &relaySession{r: r, conn: c}, nil }))
	srv.Domain = "localhost"
	srv.TLSConfig = cert
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return r, ln.Addr().String()
}

// testCerts returns a server TLS configuration and a client one that
// trusts it (httptest's certificate, valid for example.com).
func testCerts(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(ts.Close)
	roots := ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	return &tls.Config{Certificates: ts.TLS.Certificates}, &tls.Config{RootCAs: roots, ServerName: "example.com"}
}

func exportMail() dataexport.Mail {
	return dataexport.Mail{To: "dpo@shop.example", Subject: "Customer data request gdr_1", Text: "See the attachment.",
		AttachmentName: "data-request-gdr_1.json", Attachment: []byte(`{"format_version":1}`), Date: time.Unix(1790000000, 0)}
}

func TestMailerUpgradesWithSTARTTLSAndAuthenticates(t *testing.T) {
	serverTLS, clientTLS := testCerts(t)
	r, addr := startRelay(t, serverTLS)
	m := &dataexport.Mailer{Addr: addr, From: "Privacy <privacy@cgp.example>", Username: "cgp", Password: "relay-password",
		TLSConfig: clientTLS, Timeout: 10 * time.Second}
	if err := m.Send(context.Background(), exportMail()); err != nil {
		t.Fatal(err)
	}
	if len(r.data) != 1 || !r.tls[0] || r.users[0] != "cgp" {
		t.Fatalf("received %d, tls %v, users %v", len(r.data), r.tls, r.users)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(r.data[0]))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header.Get("To") != "<dpo@shop.example>" || !strings.Contains(msg.Header.Get("From"), "privacy@cgp.example") ||
		msg.Header.Get("Subject") != "Customer data request gdr_1" || msg.Header.Get("Message-Id") == "" {
		t.Errorf("headers: %v", msg.Header)
	}
	_, params, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	mr := multipart.NewReader(msg.Body, params["boundary"])
	parts := 0
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		parts++
		if parts == 2 && (!strings.Contains(p.Header.Get("Content-Disposition"), `filename=data-request-gdr_1.json`) ||
			p.Header.Get("Content-Transfer-Encoding") != "base64") {
			t.Errorf("attachment headers: %v", p.Header)
		}
	}
	if parts != 2 {
		t.Errorf("%d parts, want 2", parts)
	}
}

func TestMailerPlainRelayAndFailures(t *testing.T) {
	r, addr := startRelay(t, nil)
	m := &dataexport.Mailer{Addr: addr, From: "privacy@cgp.example", Timeout: 10 * time.Second}
	if err := m.Send(context.Background(), exportMail()); err != nil || len(r.data) != 1 || r.tls[0] {
		t.Fatalf("plain relay: %v, %d, %v", err, len(r.data), r.tls)
	}
	reason := func(err error) string {
		var me *dataexport.MailError
		if !errors.As(err, &me) {
			t.Fatalf("not a MailError: %v", err)
		}
		if strings.Contains(err.Error(), "dpo@shop.example") {
			t.Errorf("error names the recipient: %v", err)
		}
		return me.Reason
	}
	r.rcptErr = &smtp.SMTPError{Code: 550, Message: "no such user dpo@shop.example"}
	if got := reason(m.Send(context.Background(), exportMail())); got != "smtp_550" {
		t.Errorf("refused recipient: %s", got)
	}
	r.rcptErr = nil
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	if got := reason((&dataexport.Mailer{Addr: closed, From: "privacy@cgp.example", Timeout: 5 * time.Second}).Send(context.Background(), exportMail())); got != "smtp_connect_failed" {
		t.Errorf("closed relay: %s", got)
	}
	bad := exportMail()
	bad.To = "not an address"
	if got := reason(m.Send(context.Background(), bad)); got != "invalid_message" {
		t.Errorf("bad recipient: %s", got)
	}
}

// FuzzMailHeaders: whatever the recipient and subject, the composed mail
// parses, has one To naming exactly the recipient's address, and no header
// the inputs did not ask for.
func FuzzMailHeaders(f *testing.F) {
	f.Add("dpo@shop.example", "Customer data request gdr_1")
	f.Add("\"Eve\r\nBcc: x@y.z\" <a@b.c>", "subject\r\nBcc: evil@example.com")
	f.Add("a@b.c\nBcc: x@y.z", "ok")
	f.Fuzz(func(t *testing.T, to, subject string) {
		r, addr := relayForFuzz(t)
		m := &dataexport.Mailer{Addr: addr, From: "privacy@cgp.example", Timeout: 5 * time.Second}
		msg := exportMail()
		msg.To, msg.Subject = to, subject
		err := m.Send(context.Background(), msg)
		parsed, perr := mail.ParseAddress(to)
		if perr != nil {
			if err == nil {
				t.Fatalf("sent to unparsable %q", to)
			}
			return
		}
		if err != nil {
			return // the relay may refuse odd addresses
		}
		got, err := mail.ReadMessage(bytes.NewReader(r.last()))
		if err != nil {
			t.Fatalf("composed mail does not parse: %v", err)
		}
		if len(got.Header["Bcc"]) != 0 || len(got.Header["To"]) != 1 {
			t.Fatalf("headers %v", got.Header)
		}
		if a, err := mail.ParseAddress(got.Header.Get("To")); err != nil || a.Address != parsed.Address {
			t.Fatalf("To %q, want %q", got.Header.Get("To"), parsed.Address)
		}
	})
}

var fuzzRelay struct {
	once sync.Once
	r    *relay
	addr string
}

func relayForFuzz(t *testing.T) (*relayView, string) {
	fuzzRelay.once.Do(func() {
		r := &relay{}
		srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &relaySession{r: r, conn: c}, nil }))
		srv.Domain = "localhost"
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		go func() { _ = srv.Serve(ln) }()
		fuzzRelay.r, fuzzRelay.addr = r, ln.Addr().String()
	})
	return &relayView{fuzzRelay.r}, fuzzRelay.addr
}

type relayView struct{ r *relay }

func (v *relayView) last() []byte {
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	return v.r.data[len(v.r.data)-1]
}

// The mail goes through channels/email: the export is the attached JSON,
// byte for byte, after a text part, and the sender's domain names the
// Message-ID.
func TestMailerAttachesTheExportByteForByte(t *testing.T) {
	r, addr := startRelay(t, nil)
	m := &dataexport.Mailer{Addr: addr, From: "privacy@cgp.example", Timeout: 10 * time.Second}
	want := exportMail()
	want.Attachment = bytes.Repeat([]byte(`{"format_version":1,"name":"Zoë"}`), 50)
	if err := m.Send(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(r.data[0]))
	if err != nil {
		t.Fatal(err)
	}
	if id := msg.Header.Get("Message-Id"); !strings.HasSuffix(id, "@cgp.example>") {
		t.Errorf("Message-ID %q", id)
	}
	if date, err := msg.Header.Date(); err != nil || !date.Equal(want.Date) {
		t.Errorf("Date %q: %v", msg.Header.Get("Date"), err)
	}
	_, params, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var bodies [][]byte
	var types []string
	for {
		p, err := mr.NextPart() // decodes quoted-printable; base64 below
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var rd io.Reader = p
		if p.Header.Get("Content-Transfer-Encoding") == "base64" {
			rd = base64.NewDecoder(base64.StdEncoding, p)
		}
		b, err := io.ReadAll(rd)
		if err != nil {
			t.Fatal(err)
		}
		bodies, types = append(bodies, b), append(types, p.Header.Get("Content-Type"))
	}
	if len(bodies) != 2 || !strings.HasPrefix(types[0], "text/plain") || !strings.HasPrefix(types[1], "application/json") {
		t.Fatalf("parts %v", types)
	}
	if string(bodies[0]) != want.Text || !bytes.Equal(bodies[1], want.Attachment) {
		t.Errorf("text %q; attachment equal: %v", bodies[0], bytes.Equal(bodies[1], want.Attachment))
	}
}
