package dataexport

import (
	"context"
	"crypto/tls"
	"errors"
	"net/mail"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/channels/email"
)

// DefaultMailTimeout bounds one SMTP delivery when Mailer.Timeout is zero.
const DefaultMailTimeout = 60 * time.Second

// Mailer sends mail through one SMTP relay with channels/email's Sender:
// STARTTLS whenever the relay offers it (required unless the relay is on
// loopback), then AUTH PLAIN when a username is set.
type Mailer struct {
	// Addr is the relay, host:port.
	Addr string
	// From is the envelope and header sender, an RFC 5322 address
	// ("Privacy <privacy@cgp.example>").
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
// fixed word or an SMTP status (invalid_message, smtp_connect_failed,
// timeout, smtp_tls_failed, smtp_tls_unavailable, smtp_auth_failed,
// smtp_550, smtp_failed).
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
	// Date is the message's date; the time of sending when zero.
	Date time.Time
}

// Configured reports whether the mailer has a relay and a sender.
func (m *Mailer) Configured() bool { return m != nil && m.Addr != "" && m.From != "" }

// Send delivers msg.
func (m *Mailer) Send(ctx context.Context, msg Mail) error {
	from, err := mail.ParseAddress(m.From)
	if err != nil {
		return &MailError{Reason: "invalid_message", err: errors.New("the sender is not an e-mail address")}
	}
	to, err := mail.ParseAddress(msg.To)
	if err != nil {
		return &MailError{Reason: "invalid_message", err: errors.New("the recipient is not an e-mail address")}
	}
	date := msg.Date
	if date.IsZero() {
		date = time.Now()
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = DefaultMailTimeout
	}
	s := &email.Sender{Addr: m.Addr, Username: m.Username, Password: m.Password, TLSConfig: m.TLSConfig,
		HeloName: m.LocalName, Timeout: timeout}
	_, err = s.Send(ctx, email.Message{
		From: *from, To: *to, Subject: msg.Subject, Text: msg.Text, Date: date,
		MessageIDDomain: messageIDDomain(from.Address),
		Attachments:     []email.Attachment{{Filename: msg.AttachmentName, ContentType: "application/json", Data: msg.Attachment}},
	})
	if err != nil {
		return &MailError{Reason: mailReasonOf(channels.Classify(err)), err: err}
	}
	return nil
}

// mailReasonOf names a SendError with the reasons the export's attempts
// have always recorded (smtp_…), so that the history reads the same.
func mailReasonOf(se *channels.SendError) string {
	switch se.Code {
	case channels.CodeInvalidRequest:
		return "invalid_message"
	case channels.CodeConnectFailed:
		return "smtp_connect_failed"
	case channels.CodeTimeout:
		return "timeout"
	case email.CodeTLSFailed:
		return "smtp_tls_failed"
	case email.CodeTLSUnavailable:
		return "smtp_tls_unavailable"
	case channels.CodeUnauthorized:
		return "smtp_auth_failed"
	}
	if strings.HasPrefix(se.Code, "smtp_") {
		return se.Code // the relay's status, smtp_550
	}
	return "smtp_failed"
}

// messageIDDomain is the sender's domain when it is a plain host name,
// else cgp.invalid (an address literal such as [192.0.2.1] is not one).
func messageIDDomain(addr string) string {
	host := addr[strings.LastIndexByte(addr, '@')+1:]
	if host == "" || strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != "" ||
		host[0] == '.' || host[0] == '-' || len(host) > 253 {
		return "cgp.invalid"
	}
	return host
}
