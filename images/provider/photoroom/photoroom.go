package photoroom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/channels"
)

// DefaultBaseURL is the documented production server of the Image Editing
// API (Plus plan).
const DefaultBaseURL = "https://image-api.photoroom.com"

// EditPath is the Image Editing v2 endpoint, appended to the base URL.
const EditPath = "/v2/edit"

// DefaultTimeout bounds one request, upload to the end of the answer: a
// generated background takes seconds, not minutes.
const DefaultTimeout = 90 * time.Second

// DefaultMaxResponse is the largest answer read, in bytes (50 MB): a
// 4K PNG is well under it.
const DefaultMaxResponse int64 = 50_000_000

// MaxPromptBytes is the longest prompt sent (the API's own option limit
// is 4 KiB too).
const MaxPromptBytes = 4 << 10

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// Config is the client's configuration; zero fields take their defaults.
type Config struct {
	// BaseURL is the provider's address without a trailing slash
	// (default DefaultBaseURL); requests go to BaseURL + EditPath.
	BaseURL string
	// APIKey is the x-api-key credential. A secret: never logged nor put
	// in an error. Required.
	APIKey string
	// HTTP is the client the requests go through (default: a plain
	// client that follows no redirect).
	HTTP *http.Client
	// Timeout bounds each request (default DefaultTimeout).
	Timeout time.Duration
	// MaxResponse is the largest image accepted in an answer, in bytes
	// (default DefaultMaxResponse).
	MaxResponse int64
	// Now is the clock that turns an HTTP-date Retry-After into a
	// duration (default time.Now).
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.MaxResponse == 0 {
		c.MaxResponse = DefaultMaxResponse
	}
	channels.ClientDefaults(&c.HTTP, &c.Timeout, DefaultTimeout, &c.Now)
}

// Validate reports every problem of the configuration at once, naming the
// field and never its value.
func (c Config) Validate() error {
	var errs []error
	if !channels.ValidBaseURL(c.BaseURL) {
		errs = append(errs, errors.New("photoroom: base URL must be an absolute http(s) URL without user info, query or fragment"))
	}
	if c.APIKey == "" {
		errs = append(errs, errors.New("photoroom: API key is empty"))
	} else if !channels.PrintableASCII(c.APIKey) {
		errs = append(errs, errors.New("photoroom: API key has a character outside printable ASCII"))
	}
	if c.Timeout < 0 {
		errs = append(errs, errors.New("photoroom: timeout must not be negative"))
	}
	if c.MaxResponse < 0 {
		errs = append(errs, errors.New("photoroom: response limit must not be negative"))
	}
	return errors.Join(errs...)
}

// Client asks the provider for scenes. It is safe for concurrent use.
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

// Scene is one request: a product photo and the scene to put it in.
type Scene struct {
	// Image is the photo: PNG, JPEG or WebP bytes (sniffed).
	Image []byte
	// Prompt describes the background to generate ("on a marble kitchen
	// counter, morning light"): valid UTF-8, not blank, no control
	// characters, at most MaxPromptBytes.
	Prompt string
	// OutputSize is "WIDTHxHEIGHT", "originalImage", "croppedSubject",
	// "auto" or empty (the provider's default, auto).
	OutputSize string
	// Format is the answer's format: "png" (default when empty), "jpeg"
	// or "webp".
	Format string
	// Seed, when not 0, asks for a result like an earlier one's
	// (Result.Seed).
	Seed int64
}

// Result is the provider's image.
type Result struct {
	// Image is the answer's bytes.
	Image []byte
	// ContentType is the sniffed media type: "image/png", "image/jpeg"
	// or "image/webp" (whatever the answer's header claimed).
	ContentType string
	// Seed is pr-ai-background-seed, 0 when absent or unreadable.
	Seed int64
	// UncertaintyScore is x-uncertainty-score (0 confident … 1 unsure, -1
	// for humans); HasUncertainty is false when the header was absent or
	// unreadable.
	UncertaintyScore float64
	HasUncertainty   bool
}

// FieldError is the cause of an invalid_request ProviderError refused
// before any request: the Scene field at fault and why, never its value.
type FieldError struct {
	Field, Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func invalid(field, reason string) *ProviderError {
	return &ProviderError{Code: CodeInvalidRequest, err: &FieldError{Field: field, Reason: reason}}
}

var outputSizeRE = regexp.MustCompile(`^(auto|[1-9][0-9]{0,4}x[1-9][0-9]{0,4}|originalImage|croppedSubject)$`)

// Generate sends s and returns the scene. Every failure is a
// *ProviderError; an invalid s is a non-retryable invalid_request with a
// *FieldError cause, and no request is made.
func (c *Client) Generate(ctx context.Context, s Scene) (Result, error) {
	body, contentType, err := encode(s)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL+EditPath, bytes.NewReader(body))
	if err != nil {
		return Result{}, &ProviderError{Code: CodeInvalidRequest, err: errorString("build request")}
	}
	req.Header.Set("x-api-key", c.cfg.APIKey)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "image/png, image/jpeg, image/webp, application/json")
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return Result{}, transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return Result{}, ParseError(resp.StatusCode, resp.Header, raw, c.cfg.Now())
	}
	limit := c.cfg.MaxResponse
	if resp.ContentLength > limit {
		return Result{}, &ProviderError{Code: CodeAnswerTooLarge, Status: resp.StatusCode,
			err: fmt.Errorf("declared %d bytes, limit %d", resp.ContentLength, limit)}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		// The provider answered 200 (and charged): a retry would be
		// charged again, so the reactor decides, not a blind loop.
		if ctx.Err() != nil {
			return Result{}, transportError(ctx, err)
		}
		return Result{}, &ProviderError{Code: CodeProviderError, Status: resp.StatusCode, err: errorString("answer cut short")}
	}
	if int64(len(raw)) > limit {
		return Result{}, &ProviderError{Code: CodeAnswerTooLarge, Status: resp.StatusCode,
			err: fmt.Errorf("more than %d bytes", limit)}
	}
	ct := sniff(raw)
	if ct == "" {
		return Result{}, &ProviderError{Code: CodeInvalidAnswer, Status: resp.StatusCode,
			err: errorString("answer is not a PNG, JPEG or WebP image")}
	}
	res := Result{Image: raw, ContentType: ct}
	if v, err := strconv.ParseInt(strings.TrimSpace(resp.Header.Get("pr-ai-background-seed")), 10, 64); err == nil {
		res.Seed = v
	}
	if v, err := strconv.ParseFloat(strings.TrimSpace(resp.Header.Get("x-uncertainty-score")), 64); err == nil && v >= -1 && v <= 1 {
		res.UncertaintyScore, res.HasUncertainty = v, true
	}
	return res, nil
}

// encode checks s and builds the multipart body: the documented fields
// only, all in the body (the POST endpoint takes none in the query).
func encode(s Scene) ([]byte, string, error) {
	ct := sniff(s.Image)
	if ct == "" {
		return nil, "", invalid("image", "must be a PNG, JPEG or WebP image")
	}
	if strings.TrimSpace(s.Prompt) == "" || len(s.Prompt) > MaxPromptBytes || !utf8.ValidString(s.Prompt) ||
		strings.IndexFunc(s.Prompt, unicode.IsControl) >= 0 {
		return nil, "", invalid("prompt", fmt.Sprintf("must be 1 to %d bytes of UTF-8 text without control characters", MaxPromptBytes))
	}
	if s.OutputSize != "" && !outputSizeRE.MatchString(s.OutputSize) {
		return nil, "", invalid("output_size", `must be "WIDTHxHEIGHT", "originalImage", "croppedSubject" or "auto"`)
	}
	format := s.Format
	switch format {
	case "":
		format = "png"
	case "png", "jpeg", "webp":
	default:
		return nil, "", invalid("format", `must be "png", "jpeg" or "webp"`)
	}
	var buf bytes.Buffer
	buf.Grow(len(s.Image) + 1024)
	w := multipart.NewWriter(&buf)
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", `form-data; name="imageFile"; filename="image.`+strings.TrimPrefix(ct, "image/")+`"`)
	h.Set("Content-Type", ct)
	part, err := w.CreatePart(h)
	if err == nil {
		_, err = part.Write(s.Image)
	}
	fields := [][2]string{{"background.prompt", s.Prompt}, {"export.format", format}}
	if s.OutputSize != "" {
		fields = append(fields, [2]string{"outputSize", s.OutputSize})
	}
	if s.Seed != 0 {
		fields = append(fields, [2]string{"background.seed", strconv.FormatInt(s.Seed, 10)})
	}
	for _, f := range fields {
		if err == nil {
			err = w.WriteField(f[0], f[1])
		}
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil { // writes to a bytes.Buffer do not fail
		return nil, "", &ProviderError{Code: CodeInvalidRequest, err: errorString("encode the form")}
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

// sniff returns the media type of an accepted image, "" for anything else.
func sniff(b []byte) string {
	switch ct := http.DetectContentType(b); ct {
	case "image/png", "image/jpeg", "image/webp":
		return ct
	}
	return ""
}
