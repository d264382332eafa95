package email

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/cgp-platform/cgp/channels"
)

// DefaultTimeout bounds one Send when Sender.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// Codes of failures particular to SMTP (besides "smtp_<status>").
const (
	// CodeTLSUnavailable: the relay is not on loopback and did not offer
	// STARTTLS. Retryable: the relay or the path may be mended; the
	// message is not at fault.
	CodeTLSUnavailable = "tls_unavailable"
	// CodeTLSFailed: the STARTTLS handshake failed (for example the
	// relay's certificate did not verify). Retryable, as above.
	CodeTLSFailed = "tls_failed"
)

// Sender submits messages to one SMTP relay. Its zero Timeout means
// DefaultTimeout. A Sender is safe for concurrent use; each Send opens
// its own connection.
type Sender struct {
	// Addr is the relay, host:port.
	Addr string
	// Username and Password, when Username is set, authenticate with
	// AUTH PLAIN (over TLS, or to a relay on loopback). Password is a
	// secret: it is never logged nor put in an error.
	Username, Password string
	// TLSConfig is used for STARTTLS; when nil, the relay's certificate
	// is checked against the system roots for Addr's host. Its
	// ServerName defaults to Addr's host.
	TLSConfig *tls.Config
	// HeloName is the name given in EHLO; "localhost" when empty.
	HeloName string
	// Timeout bounds the whole Send, and each SMTP command within it.
	Timeout time.Duration
}

// Sent is a message the relay accepted.
type Sent struct {
	// MessageID is the message's Message-ID without its angle brackets,
	// by which bounces and replies refer to it.
	MessageID string
}

// Send builds m and submits it: dial, EHLO, STARTTLS when offered
// (required unless the relay is on loopback), AUTH when credentials are
// set, MAIL FROM (m.From), RCPT TO (m.To), DATA. It returns once the
// relay accepted the data; a failed QUIT after that is no failure.
//
// Every error is a *channels.SendError: invalid_request (nothing was
// sent), connect_failed, timeout (ctx done or Timeout passed), tls_…,
// unauthorized (credentials set but the relay offers no AUTH), the
// relay's reply as smtp_<status> (4xx retryable, 5xx not), or a
// retryable provider_error (the connection broke mid-way; when that
// happens after the data was sent the relay may have accepted it, so a
// retry may deliver twice).
func (s *Sender) Send(ctx context.Context, m Message) (Sent, error) {
	raw, id, err := build(m)
	if err != nil {
		return Sent{}, err
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	c, err := s.connect(ctx, timeout)
	if err != nil {
		return Sent{}, err
	}
	defer c.Close()
	if err := submit(ctx, c.Client, m, raw); err != nil {
		return Sent{}, err
	}
	_ = c.Quit() // the relay has the message: a failed goodbye changes nothing
	return Sent{MessageID: id}, nil
}

// submit runs one mail transaction on c.
func submit(ctx context.Context, c *smtp.Client, m Message, raw []byte) error {
	if err := c.Mail(m.From.Address, nil); err != nil {
		return classify(ctx, "mail from", err)
	}
	if err := c.Rcpt(m.To.Address, nil); err != nil {
		return classify(ctx, "rcpt to", err)
	}
	w, err := c.Data()
	if err != nil {
		return classify(ctx, "data", err)
	}
	if _, err := io.Copy(w, bytes.NewReader(raw)); err != nil {
		return classify(ctx, "data", err)
	}
	if err := w.Close(); err != nil {
		return classify(ctx, "end of data", err)
	}
	return nil
}

// conn is a client whose connection is closed when ctx is done, which
// makes any blocked read or write return.
type conn struct {
	*smtp.Client
	stop func() bool
}

func (c *conn) Close() {
	c.stop()
	_ = c.Client.Close()
}

// connect returns a client that said EHLO, over TLS when the relay offers
// STARTTLS, and authenticated when credentials are set. go-smtp can only
// start TLS on a fresh client, so a relay offering STARTTLS is dialled
// twice: once to read its extensions, once to upgrade.
func (s *Sender) connect(ctx context.Context, timeout time.Duration) (*conn, error) {
	c, err := s.dial(ctx, timeout, nil)
	if err != nil {
		return nil, err
	}
	if err := c.Hello(s.heloName()); err != nil {
		c.Close()
		return nil, classify(ctx, "hello", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		c.Close()
		if c, err = s.dial(ctx, timeout, s.tlsConfig()); err != nil {
			return nil, err
		}
		if err := c.Hello(s.heloName()); err != nil {
			c.Close()
			return nil, classify(ctx, "hello after starttls", err)
		}
	} else if !s.loopback() {
		c.Close()
		return nil, channels.NewSendError(CodeTLSUnavailable, true, 0, errors.New("the relay does not offer STARTTLS"))
	}
	if s.Username == "" {
		return c, nil
	}
	if _, isTLS := c.TLSConnectionState(); !isTLS && !s.loopback() {
		c.Close() // unreachable while STARTTLS is required off loopback; kept as the rule
		return nil, channels.NewSendError(channels.CodeUnauthorized, false, 0, errors.New("no AUTH without TLS"))
	}
	if ok, _ := c.Extension("AUTH"); !ok {
		c.Close()
		return nil, channels.NewSendError(channels.CodeUnauthorized, false, 0, errors.New("the relay offers no AUTH"))
	}
	if err := c.Auth(sasl.NewPlainClient("", s.Username, s.Password)); err != nil {
		c.Close()
		return nil, classify(ctx, "auth", err)
	}
	return c, nil
}

// dial connects and, with cfg, upgrades with STARTTLS.
func (s *Sender) dial(ctx context.Context, timeout time.Duration, cfg *tls.Config) (*conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		if ctx.Err() != nil || isTimeout(err) {
			return nil, channels.NewSendError(channels.CodeTimeout, true, 0, errors.New("connect timed out"))
		}
		return nil, channels.NewSendError(channels.CodeConnectFailed, true, 0, errors.New("connect failed"))
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	var c *smtp.Client
	if cfg == nil {
		c = smtp.NewClient(nc)
	} else if c, err = smtp.NewClientStartTLS(nc, cfg); err != nil {
		stop()
		_ = nc.Close()
		se := classify(ctx, "starttls", err)
		if se.Code == channels.CodeProviderError { // neither a reply nor a timeout
			se = channels.NewSendError(CodeTLSFailed, true, 0, errors.New("starttls failed"))
		}
		return nil, se
	}
	c.CommandTimeout, c.SubmissionTimeout = timeout, timeout
	return &conn{Client: c, stop: stop}, nil
}

func (s *Sender) tlsConfig() *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.TLSConfig != nil {
		cfg = s.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(s.Addr)
	}
	return cfg
}

func (s *Sender) heloName() string {
	if s.HeloName != "" {
		return s.HeloName
	}
	return "localhost"
}

func (s *Sender) loopback() bool {
	host, _, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// classify turns a failure during the SMTP conversation into a SendError.
// The relay's text is not kept: it may echo the recipient's address.
func classify(ctx context.Context, step string, err error) *channels.SendError {
	var se *smtp.SMTPError
	switch {
	case ctx.Err() != nil || isTimeout(err):
		return channels.NewSendError(channels.CodeTimeout, true, 0, errors.New(step+": timed out"))
	case errors.As(err, &se) && se.Code >= 400 && se.Code < 600:
		cause := fmt.Errorf("%s: the relay replied %d", step, se.Code)
		if e := se.EnhancedCode; e[0] > 0 {
			cause = fmt.Errorf("%s: the relay replied %d %d.%d.%d", step, se.Code, e[0], e[1], e[2])
		}
		return channels.NewSendError("smtp_"+strconv.Itoa(se.Code), se.Code < 500, se.Code, cause)
	case errors.As(err, &se):
		return channels.NewSendError(channels.CodeProviderError, true, se.Code,
			fmt.Errorf("%s: the relay replied %d", step, se.Code))
	}
	var certErr *tls.CertificateVerificationError
	var alert tls.AlertError
	var recordErr tls.RecordHeaderError
	if errors.As(err, &certErr) || errors.As(err, &alert) || errors.As(err, &recordErr) {
		return channels.NewSendError(CodeTLSFailed, true, 0, errors.New(step+": tls failed"))
	}
	return channels.NewSendError(channels.CodeProviderError, true, 0, errors.New(step+": the connection failed"))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
