package input

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/image/webp"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// Default limits. They are part of the public contract (documented in the
// API reference): 25 MB of image and 25 megapixels.
const (
	// DefaultMaxBytes is the largest image accepted, in bytes (25 MB).
	DefaultMaxBytes int64 = 25_000_000
	// DefaultMaxPixels is the largest width × height accepted (25 MP).
	DefaultMaxPixels int64 = 25_000_000
)

// Limits of the non-image parts of a request.
const (
	// MultipartOverhead is what a multipart body may carry beyond the image:
	// boundaries, part headers and option fields.
	MultipartOverhead = 64 << 10
	// maxOptions is the largest number of options a request may carry.
	maxOptions = 32
	// maxOptionBytes is the longest option value (a prompt fits).
	maxOptionBytes = 4 << 10
	// sniffLen is how many bytes http.DetectContentType looks at.
	sniffLen = 512
)

// Format is an accepted image format.
type Format string

// The accepted formats.
const (
	PNG  Format = "png"
	JPEG Format = "jpeg"
	WebP Format = "webp"
)

// MediaType returns the format's media type ("image/png", …).
func (f Format) MediaType() string { return "image/" + string(f) }

// mediaTypes lists the accepted media types, in the order they are named to
// clients.
var mediaTypes = []string{"image/png", "image/jpeg", "image/webp"}

// Config holds Parse's limits. A zero field takes its default.
type Config struct {
	// MaxBytes is the largest image accepted, in bytes; DefaultMaxBytes
	// when zero.
	MaxBytes int64
	// MaxPixels is the largest width × height accepted; DefaultMaxPixels
	// when zero.
	MaxPixels int64
}

func (c Config) withDefaults() Config {
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxPixels <= 0 {
		c.MaxPixels = DefaultMaxPixels
	}
	return c
}

// Image is one request's image, checked but not decoded.
type Image struct {
	// Bytes is the image file as received.
	Bytes []byte
	// Format is the format sniffed from Bytes.
	Format Format
	// Width and Height are the dimensions read from the image header.
	Width, Height int
	// Options are the query parameters and, for a multipart body, the
	// fields other than "image", each given once.
	Options map[string]string
}

// Parse reads r's image and options within cfg's limits. It reads at most
// the limit (plus multipart overhead) from r.Body and never decodes pixels.
// It returns:
//
//   - 413 payload_too_large (*httpapi.Error) when the image, or the whole
//     body, is over the limit;
//   - 415 unsupported_media_type (*httpapi.Error) when the body is not sent
//     as one of the accepted image types or multipart/form-data, when the
//     image is not PNG, JPEG or WebP, or when the declared type does not
//     match the bytes;
//   - 422 validation_failed (*domain.Error) naming "image" when the image is
//     missing, cannot be read as its format, or has more pixels than the
//     limit, or naming the option given twice or too long.
func Parse(r *http.Request, cfg Config) (*Image, error) {
	cfg = cfg.withDefaults()
	body := r.Body
	if body == nil {
		body = http.NoBody
	}
	opts, err := queryOptions(r.URL)
	if err != nil {
		return nil, err
	}
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if ct != "" && err != nil {
		return nil, unsupported()
	}
	var (
		raw      []byte
		declared string
	)
	switch {
	case mt == "multipart/form-data":
		if r.ContentLength > cfg.MaxBytes+MultipartOverhead {
			return nil, httpapi.PayloadTooLarge(cfg.MaxBytes)
		}
		raw, declared, err = readMultipart(body, params["boundary"], cfg.MaxBytes, opts)
		if err != nil {
			return nil, err
		}
	case ct == "" || isImageType(mt):
		if r.ContentLength > cfg.MaxBytes {
			return nil, httpapi.PayloadTooLarge(cfg.MaxBytes)
		}
		raw, err = readAtMost(body, cfg.MaxBytes)
		if err != nil {
			return nil, err
		}
		if len(raw) == 0 {
			return nil, domain.Invalid("image", "is required: send the image as the request body")
		}
		if ct == "" {
			return nil, unsupported()
		}
		declared = mt
	default:
		return nil, unsupported()
	}
	return check(raw, declared, cfg, opts)
}

// check sniffs raw's format, compares it with the declared media type
// ("" or application/octet-stream: none declared) and reads the header.
func check(raw []byte, declared string, cfg Config, opts map[string]string) (*Image, error) {
	format, ok := Sniff(raw)
	if !ok {
		return nil, unsupported()
	}
	if declared != "" && declared != "application/octet-stream" && canonical(declared) != format.MediaType() {
		return nil, unsupported()
	}
	conf, err := decodeConfig(format, raw)
	if err != nil {
		return nil, domain.Invalid("image", "is not a valid %s image", strings.ToUpper(string(format)))
	}
	if conf.Width <= 0 || conf.Height <= 0 {
		return nil, domain.Invalid("image", "has no pixels")
	}
	if int64(conf.Width)*int64(conf.Height) > cfg.MaxPixels {
		return nil, domain.Invalid("image", "is %d×%d pixels, more than the limit of %d pixels",
			conf.Width, conf.Height, cfg.MaxPixels)
	}
	return &Image{Bytes: raw, Format: format, Width: conf.Width, Height: conf.Height, Options: opts}, nil
}

// Sniff returns the format of data from its first bytes: what
// http.DetectContentType says, with WebP also recognised by its RIFF and
// WEBP tags. ok is false for anything but PNG, JPEG and WebP.
func Sniff(data []byte) (f Format, ok bool) {
	if len(data) >= 12 && string(data[0:4]) == "RIFF" && string(data[8:12]) == "WEBP" {
		return WebP, true
	}
	head := data
	if len(head) > sniffLen {
		head = head[:sniffLen]
	}
	switch http.DetectContentType(head) {
	case "image/png":
		return PNG, true
	case "image/jpeg":
		return JPEG, true
	case "image/webp":
		return WebP, true
	}
	return "", false
}

func decodeConfig(f Format, raw []byte) (image.Config, error) {
	r := bytes.NewReader(raw)
	switch f {
	case PNG:
		return png.DecodeConfig(r)
	case JPEG:
		return jpeg.DecodeConfig(r)
	case WebP:
		return webp.DecodeConfig(r)
	}
	return image.Config{}, fmt.Errorf("decode config: unknown format %q", f)
}

// readAtMost reads r to its end, or answers 413 as soon as it has read more
// than limit bytes: it never reads more than limit+1.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, httpapi.PayloadTooLarge(limit)
		}
		return nil, domain.Invalid("image", "the request body could not be read")
	}
	if int64(len(raw)) > limit {
		return nil, httpapi.PayloadTooLarge(limit)
	}
	return raw, nil
}

// readMultipart reads the "image" part and adds the other fields to opts.
// It returns the image and the part's declared media type.
func readMultipart(body io.Reader, boundary string, maxBytes int64, opts map[string]string) ([]byte, string, error) {
	if boundary == "" {
		return nil, "", domain.Invalid("image", "the multipart body has no boundary")
	}
	// The whole body is bounded too, so endless small fields stop as well.
	limited := &countingReader{r: body, left: maxBytes + MultipartOverhead}
	mr := multipart.NewReader(limited, boundary)
	var (
		raw      []byte
		declared string
		seen     bool
	)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if limited.over {
				return nil, "", httpapi.PayloadTooLarge(maxBytes)
			}
			return nil, "", domain.Invalid("image", "the multipart body is malformed")
		}
		name := part.FormName()
		switch {
		case name == "image":
			if seen {
				return nil, "", domain.Invalid("image", "must be sent once")
			}
			seen = true
			pct := part.Header.Get("Content-Type")
			if pct != "" {
				mt, _, err := mime.ParseMediaType(pct)
				if err != nil {
					return nil, "", unsupported()
				}
				declared = mt
			}
			raw, err = readAtMost(part, maxBytes)
			if err != nil {
				if limited.over {
					return nil, "", httpapi.PayloadTooLarge(maxBytes)
				}
				return nil, "", err
			}
		case name == "":
			return nil, "", domain.Invalid("image", "every multipart part needs a form field name")
		default:
			v, err := readAtMost(part, maxOptionBytes)
			if err != nil {
				if limited.over {
					return nil, "", httpapi.PayloadTooLarge(maxBytes)
				}
				return nil, "", domain.Invalid(OptionField(name), "is longer than %d bytes", maxOptionBytes)
			}
			if err := addOption(opts, name, string(v)); err != nil {
				return nil, "", err
			}
		}
		_ = part.Close()
	}
	if !seen || len(raw) == 0 {
		return nil, "", domain.Invalid("image", "is required: send it as the multipart part named image")
	}
	return raw, declared, nil
}

// countingReader reads at most left bytes and remembers when the body had
// more.
type countingReader struct {
	r    io.Reader
	left int64
	over bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One more byte tells a body that ends here from one that goes on.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			c.over = true
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

var errTooLarge = errors.New("request body too large")

func queryOptions(u *url.URL) (map[string]string, error) {
	opts := make(map[string]string)
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, httpapi.InvalidParameter("query", "the query string is malformed")
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vs := q[k]
		if len(vs) > 1 {
			return nil, domain.Invalid(OptionField(k), "must be given once")
		}
		if len(vs[0]) > maxOptionBytes {
			return nil, domain.Invalid(OptionField(k), "is longer than %d bytes", maxOptionBytes)
		}
		if err := addOption(opts, k, vs[0]); err != nil {
			return nil, err
		}
	}
	return opts, nil
}

func addOption(opts map[string]string, name, value string) error {
	if name == "" {
		return domain.Invalid("option", "an option has no name")
	}
	if _, dup := opts[name]; dup {
		return domain.Invalid(OptionField(name), "must be given once")
	}
	if len(opts) >= maxOptions {
		return domain.Invalid("image", "the request has more than %d options", maxOptions)
	}
	opts[name] = value
	return nil
}

// clip bounds a client-chosen field name echoed in an error.
// OptionField is how an option's name is named in a 422's field: at most
// 64 bytes cut on a rune boundary (then "…"), and "option" for an empty
// name, so an error never echoes a long or broken name back.
func OptionField(s string) string {
	if s == "" {
		return "option"
	}
	if len(s) <= 64 {
		return s
	}
	s = s[:64]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

func isImageType(mt string) bool { return strings.HasPrefix(mt, "image/") }

// canonical maps the common alias image/jpg to image/jpeg.
func canonical(mt string) string {
	if mt == "image/jpg" || mt == "image/pjpeg" {
		return "image/jpeg"
	}
	return mt
}

// unsupported is 415 with the accepted types named.
func unsupported() *httpapi.Error {
	e := httpapi.UnsupportedMediaType()
	e.Message = "the image must be PNG, JPEG or WebP, sent as the request body with its Content-Type or as the multipart/form-data part named image, and its Content-Type must match its bytes"
	e.Details = map[string]any{"accepted": mediaTypes}
	return e
}
