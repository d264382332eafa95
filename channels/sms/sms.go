package sms

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/channels"
)

// DefaultTimeout bounds one send, from dialling to the end of the answer.
const DefaultTimeout = 15 * time.Second

// MaxSegments is the most parts a text may take (Segments): ten parts
// are 1,530 GSM-7 characters or 670 UCS-2 ones, well past any message
// the service sends, and a bound on what one send can cost a shop.
const MaxSegments = 10

// MessagesPath is the contract's endpoint, appended to the base URL.
const MessagesPath = "/v1/messages"

// maxResponse bounds how much of an answer is read: the contract's bodies
// are well under a kilobyte.
const maxResponse = 1 << 20

// maxReference bounds client_reference (the service's message ids are
// far shorter).
const maxReference = 128

// Config is the client's configuration; zero HTTP, Timeout and Now take
// their defaults.
type Config struct {
	// BaseURL is the provider's address without a trailing slash;
	// messages are posted to BaseURL + MessagesPath. Required.
	BaseURL string
	// APIKey is the bearer credential. A secret: never logged nor put
	// in an error. Required.
	APIKey string
	// From is the sender id: an E.164 number (with its +) or an
	// alphanumeric id of 1 to 11 ASCII letters, digits or spaces, not
	// all digits. Required.
	From string
	// HTTP is the client the requests go through (default: a plain
	// client that does not follow redirects).
	HTTP *http.Client
	// Timeout bounds each send (default DefaultTimeout).
	Timeout time.Duration
	// Now is the clock that turns an HTTP-date Retry-After into a
	// duration (default time.Now).
	Now func() time.Time
}

func (c *Config) setDefaults() {
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	channels.ClientDefaults(&c.HTTP, &c.Timeout, DefaultTimeout, &c.Now)
}

// Validate reports every problem of the configuration at once, naming
// the field and never its value.
func (c Config) Validate() error {
	var errs []error
	if !channels.ValidBaseURL(c.BaseURL) {
		errs = append(errs, errors.New("sms: base URL must be an absolute http(s) URL without user info, query or fragment"))
	}
	if c.APIKey == "" {
		errs = append(errs, errors.New("sms: API key is empty"))
	} else if !channels.PrintableASCII(c.APIKey) {
		// Anything else would fail in the transport as if the network
		// had, and be retried for ever.
		errs = append(errs, errors.New("sms: API key has a character outside printable ASCII"))
	}
	if !ValidSender(c.From) {
		errs = append(errs, errors.New("sms: sender id must be an E.164 number or 1 to 11 letters, digits or spaces, not all digits"))
	}
	if c.Timeout < 0 {
		errs = append(errs, errors.New("sms: timeout must not be negative"))
	}
	return errors.Join(errs...)
}

// Client sends text messages through the provider. It is safe for
// concurrent use.
type Client struct {
	cfg Config
}

// New returns a client for cfg with its defaults filled in.
func New(cfg Config) (*Client, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg}, nil
}

// Message is one text to one recipient.
type Message struct {
	// To is the recipient, E.164: "+" then 7 to 15 digits, the first
	// not 0. The "+" may be left out; it is added.
	To string
	// Text is the body, valid UTF-8, not blank, at most MaxSegments
	// segments.
	Text string
	// CallbackURL, when set, is where the provider posts the statuses:
	// an absolute http(s) URL.
	CallbackURL string
	// ClientReference, when set, is the service's message id, echoed by
	// the provider: 1 to 128 printable ASCII characters.
	ClientReference string
}

// Sent is the provider's acceptance of a message.
type Sent struct {
	// MessageID is the provider's id that the delivery callbacks carry.
	MessageID string
	// Status is the status the provider answered ("queued"), empty when
	// it was not a safe token.
	Status string
	// Segments is how many parts the text takes (Segments).
	Segments int
}

// FieldError is the cause of an invalid_request SendError: the field of
// Message (or of the request) at fault and why. It never holds the
// field's value.
type FieldError struct {
	Field, Reason string
}

func (e *FieldError) Error() string { return "sms: " + e.Field + ": " + e.Reason }

func invalid(field, reason string) *channels.SendError {
	return channels.NewSendError(channels.CodeInvalidRequest, false, 0, &FieldError{Field: field, Reason: reason})
}

// The request body of POST {base}/v1/messages.
type request struct {
	To              string `json:"to"`
	From            string `json:"from"`
	Text            string `json:"text"`
	CallbackURL     string `json:"callback_url,omitempty"`
	ClientReference string `json:"client_reference,omitempty"`
}

// Send posts m. Every failure is a *channels.SendError; an invalid m is
// a non-retryable invalid_request with a *FieldError cause, and no
// request is made.
func (c *Client) Send(ctx context.Context, m Message) (Sent, error) {
	to, err := NormalizeE164(m.To)
	if err != nil {
		return Sent{}, err
	}
	segments, err := checkText(m.Text)
	if err != nil {
		return Sent{}, err
	}
	if m.CallbackURL != "" {
		u, err := url.Parse(m.CallbackURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" ||
			!channels.PrintableASCII(m.CallbackURL) || len(m.CallbackURL) > 2048 {
			return Sent{}, invalid("callback_url", "must be an absolute http(s) URL without fragment, at most 2048 characters")
		}
	}
	if m.ClientReference != "" && (len(m.ClientReference) > maxReference || !channels.PrintableASCII(m.ClientReference)) {
		return Sent{}, invalid("client_reference", "must be 1 to 128 printable ASCII characters")
	}
	sent, err := c.post(ctx, request{To: to, From: c.cfg.From, Text: m.Text, CallbackURL: m.CallbackURL, ClientReference: m.ClientReference})
	if err != nil {
		return Sent{}, err
	}
	sent.Segments = segments
	return sent, nil
}

// NormalizeE164 returns number in E.164 form with its "+": a country
// code and a subscriber number, 7 to 15 digits, never starting with 0.
// Anything else (spaces, dashes, letters, a national number) is a
// non-retryable invalid_request naming the field "to".
func NormalizeE164(number string) (string, error) {
	digits := strings.TrimPrefix(number, "+")
	if len(digits) < 7 || len(digits) > 15 || !allDigits(digits) || digits[0] == '0' {
		return "", invalid("to", "must be an E.164 number (+ then 7 to 15 digits, the first not 0)")
	}
	return "+" + digits, nil
}

// ValidSender reports whether from is a sender id the contract takes: an
// E.164 number with its "+", or an alphanumeric id of 1 to 11 ASCII
// letters, digits or spaces that is not all digits and not blank.
func ValidSender(from string) bool {
	if strings.HasPrefix(from, "+") {
		_, err := NormalizeE164(from)
		return err == nil
	}
	if len(from) == 0 || len(from) > 11 || strings.TrimSpace(from) != from || allDigits(from) {
		return false
	}
	for i := 0; i < len(from); i++ {
		c := from[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ') {
			return false
		}
	}
	return true
}

func checkText(text string) (int, error) {
	switch {
	case strings.TrimSpace(text) == "":
		return 0, invalid("text", "is empty")
	case !utf8.ValidString(text):
		return 0, invalid("text", "is not valid UTF-8")
	}
	n := Segments(text)
	if n > MaxSegments {
		return 0, invalid("text", fmt.Sprintf("takes %d segments, at most %d allowed", n, MaxSegments))
	}
	return n, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (c *Client) post(ctx context.Context, body request) (Sent, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // texts and URLs go as written; the API reads JSON, not HTML
	if err := enc.Encode(body); err != nil {
		return Sent{}, channels.NewSendError(channels.CodeInvalidRequest, false, 0, fmt.Errorf("sms: encode request: %w", err))
	}
	a, err := channels.PostJSON(ctx, c.cfg.HTTP, "sms", c.cfg.BaseURL+MessagesPath, c.cfg.APIKey, buf.Bytes(), c.cfg.Timeout, maxResponse)
	if err != nil {
		return Sent{}, err
	}
	return parseResponse(a.Status, a.Header, a.Body, c.cfg.Now())
}
