package outbound

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
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

// SignAll returns the X-Service-Signature value of body under each
// secret, in order, separated by commas: "sha256=<hex>,sha256=<hex>".
// During a secret rotation's overlap a delivery carries one value per
// secret, so a receiver configured with either verifies it; with one
// secret it is Sign's value.
func SignAll(secrets [][]byte, body []byte) string {
	vals := make([]string, len(secrets))
	for i, s := range secrets {
		vals[i] = Sign(s, body)
	}
	return strings.Join(vals, ",")
}

// Verify reports whether header holds a signature of body under secret:
// header is one "sha256=<hex>" value, or several separated by commas
// (SignAll), and one match is enough. Every value is compared in constant
// time; any malformed value never matches.
func Verify(secret, body []byte, header string) bool {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	want := mac.Sum(nil)
	ok := false
	for _, v := range strings.Split(header, ",") {
		hexSum, found := strings.CutPrefix(strings.TrimSpace(v), SignaturePrefix)
		if !found || len(hexSum) != 2*sha256.Size {
			continue
		}
		got, err := hex.DecodeString(hexSum)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			ok = true
		}
	}
	return ok
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

// Reasons of a failed delivery, safe to record and to show the shop.
// Besides these, a status answered is "http_<status>".
const (
	// ReasonAddressRefused: the guard refused the destination (a special
	// address, literally or after resolution) before any connection.
	ReasonAddressRefused = "address_refused"
	// ReasonConnectFailed: the name did not resolve, or the connection
	// was refused or reset.
	ReasonConnectFailed = "connect_failed"
	// ReasonTLSFailed: the TLS handshake failed (certificate, protocol).
	ReasonTLSFailed = "tls_failed"
	// ReasonTimeout: no answer within the timeout.
	ReasonTimeout = "timeout"
	// ReasonRedirect: a 3xx answer (never followed).
	ReasonRedirect = "redirect"
	// ReasonInvalidURL: the URL is not one the service posts to.
	ReasonInvalidURL = "invalid_url"
	// ReasonCanceled: the service stopped during the delivery.
	ReasonCanceled = "canceled"
)

// Error is a failed delivery. Reason is safe to record and log: a status
// ("http_500") or one of the Reason… constants; it never holds the dial
// error's text (which names the address and port), so recorded failures
// cannot be used to probe ports.
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

// Sender posts messages through the outbound guard (NewClient). The
// zero value guards every connection and times out after DefaultTimeout.
// It is safe for concurrent use; its fields must not change once it has
// sent.
type Sender struct {
	// AllowPrivate lifts the guard and admits plain http (the operator's
	// --outbound-allow-private: self-hosting and tests).
	AllowPrivate bool
	// TLSConfig, when set, is the TLS configuration of the connections
	// (tests trust their TLS server's certificate with it).
	TLSConfig *tls.Config
	// Timeout bounds one delivery, the answer included; DefaultTimeout
	// when zero.
	Timeout time.Duration
	// UserAgent is sent when set.
	UserAgent string

	once sync.Once
	c    *http.Client
}

// Send posts m signed with secret and returns the status of a 2xx answer;
// any other outcome is an *Error. The answer's body is read (up to 64 KiB,
// so the connection can be reused) and dropped.
func (s *Sender) Send(ctx context.Context, secret []byte, m Message) (int, error) {
	resp, err := s.Post(ctx, [][]byte{secret}, m)
	return resp.Status, err
}

// MaxResponseBody is how much of an answer's body Post keeps.
const MaxResponseBody = 4 << 10

// Response is what an endpoint answered.
type Response struct {
	// Status is the HTTP status, 0 when no answer came.
	Status int
	// Body is the first MaxResponseBody bytes of the answer's body.
	Body []byte
	// RetryAfter is the answer's Retry-After (seconds or an HTTP date),
	// 0 when absent, unreadable or in the past.
	RetryAfter time.Duration
	// Latency is from the request's start to the answer's body read.
	Latency time.Duration
}

// Post posts m signed with every secret (SignAll) and reports the answer;
// an outcome other than a 2xx is also an *Error. The answer's body is
// read up to 64 KiB, so the connection can be reused, and its first
// MaxResponseBody bytes kept.
func (s *Sender) Post(ctx context.Context, secrets [][]byte, m Message) (Response, error) {
	if err := CheckURL(m.URL, s.AllowPrivate); err != nil {
		if errors.Is(err, ErrAddressRefused) {
			return Response{}, &Error{Reason: ReasonAddressRefused, err: err}
		}
		return Response{}, &Error{Reason: ReasonInvalidURL, err: err}
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return Response{}, &Error{Reason: ReasonInvalidURL, err: errors.New("bad request")}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderSignature, SignAll(secrets, m.Body))
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
	start := time.Now()
	resp, err := s.client().Do(req)
	if err != nil {
		return Response{Latency: time.Since(start)}, &Error{Reason: transportReason(ctx, err), err: errors.New("request failed")}
	}
	var buf bytes.Buffer
	_, _ = io.Copy(&buf, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	body := buf.Bytes()
	if len(body) > MaxResponseBody {
		body = body[:MaxResponseBody]
	}
	out := Response{Status: resp.StatusCode, Body: bytes.Clone(body), Latency: time.Since(start),
		RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		reason := "http_" + strconv.Itoa(resp.StatusCode)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			reason = ReasonRedirect
		}
		return out, &Error{Reason: reason, Status: resp.StatusCode}
	}
	return out, nil
}

// retryAfter reads a Retry-After value: delay seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func (s *Sender) client() *http.Client {
	s.once.Do(func() { s.c = NewClient(ClientOptions{AllowPrivate: s.AllowPrivate, TLSConfig: s.TLSConfig}) })
	return s.c
}
