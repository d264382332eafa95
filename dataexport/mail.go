package dataexport

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"net/textproto"
	"strconv"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// DefaultMailTimeout bounds one SMTP delivery when Mailer.Timeout is zero.
const DefaultMailTimeout = 60 * time.Second

// Mailer sends mail through one SMTP relay with go-smtp's client:
// STARTTLS whenever the relay offers it, then AUTH PLAIN when a username
// is set (only over TLS, or to a loopback relay).
type Mailer struct {
	// Addr is the relay, host:port.
	Addr string
	// From is the envelope and header sender.
	From string
	// Username and Password authenticate; Password is a secret.
	Username, Password string
	// TLSConfig, when set, is used for STARTTLS (tests); otherwise the
	// relay's certificate is checked against the system roots.
	TLSConfig *tls.Config
	// Timeout bounds the whole delivery; DefaultMailTimeout when zero.
	Timeout time.Duration
	// LocalName is the EHLO name; "localhost" when empty.
	LocalName string
}

// MailError is a failed delivery. Reason is safe to record and log: a
// fixed word or an SMTP status (smtp_connect_failed, smtp_tls_failed,
// smtp_auth_failed, smtp_550, smtp_failed).
type MailError struct {
	Reason string
	err    error
}

func (e *MailError) Error() string { return "mail delivery failed: " + e.Reason }

func (e *MailError) Unwrap() error { return e.err }

// Mail is one message with one attachment.
type Mail struct {
	To, Subject, Text string
	// AttachmentName and Attachment are the attached file, sent as
	// application/json.
	AttachmentName string
	Attachment     []byte
	Date           time.Time
}

// Configured reports whether the mailer has a relay and a sender.
func (m *Mailer) Configured() bool { return m != nil && m.Addr != "" && m.From != "" }

// Send delivers msg.
func (m *Mailer) Send(ctx context.Context, msg Mail) error {
	body, err := compose(m.From, msg)
	if err != nil {
		return &MailError{Reason: "invalid_message", err: err}
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = DefaultMailTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := m.dial(ctx, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	if m.Username != "" {
		_, isTLS := c.TLSConnectionState()
		if !isTLS && !m.loopback() {
			return &MailError{Reason: "smtp_auth_without_tls"}
		}
		if err := c.Auth(sasl.NewPlainClient("", m.Username, m.Password)); err != nil {
			return smtpError("smtp_auth_failed", err)
		}
	}
	sender, _ := mail.ParseAddress(m.From) // compose checked both
	to, _ := mail.ParseAddress(msg.To)
	if err := c.SendMail(sender.Address, []string{to.Address}, bytes.NewReader(body)); err != nil {
		return smtpError("smtp_failed", err)
	}
	if err := c.Quit(); err != nil {
		return smtpError("smtp_failed", err)
	}
	return nil
}

// dial connects and says hello, upgrading to TLS when the relay offers
// STARTTLS (which go-smtp can only do on a fresh client: the probe's
// connection is dropped and a second one upgraded).
func (m *Mailer) dial(ctx context.Context, timeout time.Duration) (*smtp.Client, error) {
	connect := func() (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", m.Addr)
		if err != nil {
			return nil, &MailError{Reason: "smtp_connect_failed", err: errors.New("connect failed")}
		}
		deadline, _ := ctx.Deadline()
		_ = conn.SetDeadline(deadline)
		return conn, nil
	}
	conn, err := connect()
	if err != nil {
		return nil, err
	}
	c := m.client(conn, timeout)
	if err := c.Hello(m.localName()); err != nil {
		c.Close()
		return nil, smtpError("smtp_connect_failed", err)
	}
	if ok, _ := c.Extension("STARTTLS"); !ok {
		return c, nil
	}
	c.Close()
	if conn, err = connect(); err != nil {
		return nil, err
	}
	cfg := m.TLSConfig
	if cfg == nil {
		host, _, _ := net.SplitHostPort(m.Addr)
		cfg = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	tc, err := smtp.NewClientStartTLS(conn, cfg)
	if err != nil {
		return nil, smtpError("smtp_tls_failed", err)
	}
	tc.CommandTimeout, tc.SubmissionTimeout = timeout, timeout
	if err := tc.Hello(m.localName()); err != nil {
		tc.Close()
		return nil, smtpError("smtp_tls_failed", err)
	}
	return tc, nil
}

func (m *Mailer) client(conn net.Conn, timeout time.Duration) *smtp.Client {
	c := smtp.NewClient(conn)
	c.CommandTimeout, c.SubmissionTimeout = timeout, timeout
	return c
}

func (m *Mailer) localName() string {
	if m.LocalName != "" {
		return m.LocalName
	}
	return "localhost"
}

func (m *Mailer) loopback() bool {
	host, _, err := net.SplitHostPort(m.Addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// smtpError names an SMTP failure by the relay's status code when it gave
// one (its text may echo addresses: it is not kept).
func smtpError(fallback string, err error) error {
	var se *smtp.SMTPError
	if errors.As(err, &se) && se.Code > 0 {
		return &MailError{Reason: "smtp_" + strconv.Itoa(se.Code), err: errors.New("relay refused")}
	}
	return &MailError{Reason: fallback, err: errors.New("relay failed")}
}

// compose builds the RFC 5322 message: a text part and the attachment,
// base64 in 76-character lines.
func compose(from string, msg Mail) ([]byte, error) {
	sender, err := mail.ParseAddress(from)
	if err != nil {
		return nil, errors.New("the sender is not an e-mail address")
	}
	to, err := mail.ParseAddress(msg.To)
	if err != nil {
		return nil, errors.New("the recipient is not an e-mail address")
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	date := msg.Date
	if date.IsZero() {
		date = time.Now()
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	host := afterAt(sender.Address)
	if host == "" {
		host = "cgp.invalid"
	}
	// Parsed and re-formatted addresses: no header can be injected.
	fmt.Fprintf(&buf, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s@%s>\r\nMIME-Version: 1.0\r\n"+
		"Content-Type: multipart/mixed; boundary=%q\r\n\r\n",
		sender.String(), to.String(), mime.QEncoding.Encode("utf-8", msg.Subject), date.UTC().Format(time.RFC1123Z),
		hex.EncodeToString(id), host, w.Boundary())
	text, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {"text/plain; charset=utf-8"}, "Content-Transfer-Encoding": {"base64"}})
	if err != nil {
		return nil, err
	}
	writeBase64(text, []byte(msg.Text))
	att, err := w.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {mime.FormatMediaType("application/json", map[string]string{"name": msg.AttachmentName})},
		"Content-Disposition":       {mime.FormatMediaType("attachment", map[string]string{"filename": msg.AttachmentName})},
		"Content-Transfer-Encoding": {"base64"},
	})
	if err != nil {
		return nil, err
	}
	writeBase64(att, msg.Attachment)
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func afterAt(addr string) string {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == '@' {
			return addr[i+1:]
		}
	}
	return ""
}

func writeBase64(w interface{ Write([]byte) (int, error) }, b []byte) {
	enc := base64.StdEncoding.EncodeToString(b)
	for len(enc) > 76 {
		_, _ = w.Write([]byte(enc[:76] + "\r\n"))
		enc = enc[76:]
	}
	_, _ = w.Write([]byte(enc + "\r\n"))
}
