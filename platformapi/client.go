package platformapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// DefaultBaseURL reaches each shop's own host.
const DefaultBaseURL = "https://{shop}"

// DefaultAPIVersion is the Admin API version the client speaks (the
// platform's quarterly release, pinned: a new one is adopted by changing
// it and running the contract tests).
const DefaultAPIVersion = "2026-10"

// DefaultShopSuffix is the platform's shop domain suffix.
const DefaultShopSuffix = "myshopify.com"

// maxResponse bounds any answer the client reads.
const maxResponse = 4 << 20

// Config configures a Client.
type Config struct {
	// BaseURL is the platform's address; "{shop}" is replaced by the
	// shop's domain. Empty: DefaultBaseURL.
	BaseURL string
	// ClientID and ClientSecret are the app's credentials on the platform.
	// The secret signs the platform's redirects and webhooks and
	// authenticates the token requests; it is never logged.
	ClientID, ClientSecret string
	// APIVersion is the Admin API version; empty: DefaultAPIVersion.
	APIVersion string
	// ShopSuffix is the domain every shop's domain ends with ("x.myshopify.com");
	// empty accepts any valid domain (a self-hosted platform).
	ShopSuffix string
	// HTTP is the client requests go through (the outbound guard's).
	HTTP *http.Client
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

// Client talks to the commerce platform on behalf of the app.
type Client struct {
	cfg Config
}

// New returns a client.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.APIVersion == "" {
		cfg.APIVersion = DefaultAPIVersion
	}
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, errors.New("platformapi: client id and secret are required")
	}
	if cfg.HTTP == nil {
		return nil, errors.New("platformapi: an HTTP client is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	u, err := url.Parse(strings.ReplaceAll(cfg.BaseURL, "{shop}", "shop.example.com"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, errors.New("platformapi: the base URL must be an absolute http(s) URL without query, fragment or user info")
	}
	return &Client{cfg: cfg}, nil
}

// ClientID is the app's client id.
func (c *Client) ClientID() string { return c.cfg.ClientID }

// ValidShop reports whether shop is a shop domain of the platform, in the
// canonical form it is put into addresses with: lower case, no scheme,
// port or path, a valid domain, under ShopSuffix when set.
func (c *Client) ValidShop(shop string) bool {
	if shop == "" || domain.NormalizeDomain(shop) != shop || !domain.ValidDomain(shop) {
		return false
	}
	if c.cfg.ShopSuffix != "" {
		rest, ok := strings.CutSuffix(shop, "."+c.cfg.ShopSuffix)
		return ok && rest != "" && !strings.Contains(rest, ".")
	}
	return true
}

// shopURL is the address of path on shop's platform host.
func (c *Client) shopURL(shop, path string) (string, error) {
	if !c.ValidShop(shop) {
		return "", &Error{Code: "invalid_shop", Message: "not a shop domain of the platform"}
	}
	return strings.TrimSuffix(strings.ReplaceAll(c.cfg.BaseURL, "{shop}", shop), "/") + path, nil
}

// Error is a failed call to the platform.
type Error struct {
	// Status is the HTTP status of the platform's answer; 0 when there was
	// none (a transport error).
	Status int
	// Code is the platform's error code when it gave one (invalid_request,
	// THROTTLED, ACCESS_DENIED, user_errors, …).
	Code string
	// Message is the platform's message (never a credential).
	Message string
	// UserErrors are the mutation's userErrors.
	UserErrors []UserError
	// Retryable: the same call may succeed later (429, 5xx, throttled,
	// no answer); RetryAfter is the platform's hint.
	Retryable  bool
	RetryAfter time.Duration
	err        error
}

// UserError is one of a mutation's userErrors.
type UserError struct {
	Field   []string `json:"field"`
	Message string   `json:"message"`
	Code    string   `json:"code,omitempty"`
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("platform")
	if e.Status != 0 {
		fmt.Fprintf(&b, " %d", e.Status)
	}
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	for i, u := range e.UserErrors {
		if i == 0 {
			b.WriteString(":")
		}
		fmt.Fprintf(&b, " %s (%s)", u.Message, strings.Join(u.Field, "."))
	}
	if e.err != nil {
		b.WriteString(": " + e.err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.err }

// ErrUnauthorized: the platform refused the access token (401): it
// expired or the app was uninstalled.
var ErrUnauthorized = errors.New("platform refused the access token")

// post sends body as JSON to shop's path and decodes a 2xx answer into
// out; header adds headers.
func (c *Client) post(ctx context.Context, shop, path string, header http.Header, body, out any) error {
	u, err := c.shopURL(shop, path)
	if err != nil {
		return err
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &Error{Code: "unreachable", Message: "the platform did not answer", Retryable: true, err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return &Error{Status: resp.StatusCode, Code: "unreachable", Message: "the answer was cut", Retryable: true, err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(resp, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &Error{Status: resp.StatusCode, Code: "bad_response", Message: "the answer is not the documented JSON", err: err}
	}
	return nil
}

// statusError is the Error of a non-2xx answer.
func statusError(resp *http.Response, raw []byte) error {
	e := &Error{Status: resp.StatusCode}
	var body struct {
		Error            any    `json:"error"`
		ErrorDescription string `json:"error_description"`
		Errors           any    `json:"errors"`
	}
	if json.Unmarshal(raw, &body) == nil {
		if s, ok := body.Error.(string); ok {
			e.Code = s
		}
		e.Message = body.ErrorDescription
		if s, ok := body.Errors.(string); ok && e.Message == "" {
			e.Message = s
		}
	}
	if len(e.Message) > 300 {
		e.Message = e.Message[:300]
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		e.err = ErrUnauthorized
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		e.Retryable = true
		if s, err := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64); err == nil && s >= 0 && s < 3600 {
			e.RetryAfter = time.Duration(s * float64(time.Second))
		}
	}
	return e
}
