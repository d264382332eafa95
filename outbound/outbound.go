package outbound

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Header names of an outbound message.
const (
	HeaderSignature = "X-Service-Signature"
	HeaderEventID   = "X-Service-Event-Id"
	HeaderEventType = "X-Service-Event-Type"
	HeaderTimestamp = "X-Service-Timestamp"
)

// SignaturePrefix starts every signature header value.
const SignaturePrefix = "sha256="

// SecretPrefix starts every signing secret NewSecret makes.
const SecretPrefix = "whsec_"

// DefaultTimeout bounds one delivery when Sender.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Sign returns the X-Service-Signature value of body under secret:
// "sha256=" and the hex HMAC-SHA256 of the raw bytes.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return SignaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether header is the signature of body under secret, in
// constant time. Any malformed header is false.
func Verify(secret, body []byte, header string) bool {
	hexSum, ok := strings.CutPrefix(strings.TrimSpace(header), SignaturePrefix)
	if !ok || len(hexSum) != 2*sha256.Size {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// NewSecret returns a new signing secret: "whsec_" and 32 random bytes,
// base64url without padding.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("signing secret: %w", err)
	}
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// CheckURL reports whether raw is an endpoint the service may post to: an
// absolute https URL with a host and no user information (credentials in
// a URL end up in logs and proxies). allowHTTP admits http too (tests).
func CheckURL(raw string, allowHTTP bool) error {
	if len(raw) > 2048 {
		return errors.New("the URL is longer than 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowHTTP:
	default:
		return errors.New("the URL must use https")
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("the URL has no host")
	}
	if u.User != nil {
		return errors.New("the URL must not carry credentials")
	}
	if u.Fragment != "" {
		return errors.New("the URL must not have a fragment")
	}
	return nil
}

// Message is one outbound notification.
type Message struct {
	// URL is the endpoint (https).
	URL string
	// EventID and EventType fill X-Service-Event-Id and -Type.
	EventID, EventType string
	// Timestamp fills X-Service-Timestamp (Unix seconds).
	Timestamp time.Time
	// Body is the JSON body, signed as is.
	Body []byte
}

// Error is a failed delivery. Reason is safe to record and log: a status
// ("http_500"), or one of timeout, connection_failed, redirect,
// invalid_url, canceled.
type Error struct {
	Reason string
	// Status is the HTTP status received, 0 when none.
	Status int
	err    error
}

func (e *Error) Error() string {
	if e.err != nil {
		return "outbound delivery failed: " + e.Reason + ": " + e.err.Error()
	}
	return "outbound delivery failed: " + e.Reason
}

func (e *Error) Unwrap() error { return e.err }

// Reason returns the recordable reason of a Send error ("failed" for an
// error that is not an *Error).
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return "failed"
}

// Sender posts messages. The zero value uses its own client with
// DefaultTimeout. It is safe for concurrent use.
type Sender struct {
	// Client, when set, sends the requests (tests inject a client that
	// trusts their TLS server). Its redirect policy is replaced: a
	// redirect is never followed.
	Client *http.Client
	// Timeout bounds one delivery, the answer included; DefaultTimeout
	// when zero.
	Timeout time.Duration
	// AllowHTTP admits plain http endpoints (tests only).
	AllowHTTP bool
	// UserAgent is sent when set.
	UserAgent string
}

// Send posts m signed with secret and returns the status of a 2xx answer;
// any other outcome is an *Error. The answer's body is read (up to 64 KiB,
// so the connection can be reused) and dropped.
func (s *Sender) Send(ctx context.Context, secret []byte, m Message) (int, error) {
	if err := CheckURL(m.URL, s.AllowHTTP); err != nil {
		return 0, &Error{Reason: "invalid_url", err: err}
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return 0, &Error{Reason: "invalid_url", err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderSignature, Sign(secret, m.Body))
	req.Header.Set(HeaderEventID, m.EventID)
	req.Header.Set(HeaderEventType, m.EventType)
	ts := m.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	if s.UserAgent != "" {
		req.Header.Set("User-Agent", s.UserAgent)
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return 0, &Error{Reason: transportReason(ctx, err), err: errors.New("request failed")}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		reason := "http_" + strconv.Itoa(resp.StatusCode)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			reason = "redirect"
		}
		return resp.StatusCode, &Error{Reason: reason, Status: resp.StatusCode}
	}
	return resp.StatusCode, nil
}

func (s *Sender) client() *http.Client {
	var c http.Client
	if s.Client != nil {
		c = *s.Client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// transportReason names a transport failure without its text (which may
// carry the URL).
func transportReason(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	default:
		return "connection_failed"
	}
}
