package input_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/images/input"
)

// FuzzParse feeds arbitrary bodies, content types and queries to Parse with
// small limits: it never panics, fails only with a 4xx error of the
// envelope, and never accepts an image over the limits or in another
// format.
func FuzzParse(f *testing.F) {
	const maxBytes, maxPixels = 8 << 10, 64 * 64
	f.Add(pngOf(f, 8, 8), "image/png", "scale=2")
	f.Add(pngOf(f, 65, 64), "image/png", "")
	f.Add(jpegOf(f, 8, 8), "image/jpeg", "")
	f.Add(webpHeader(64, 64), "image/webp", "")
	f.Add(webpHeader(65, 64), "image/webp", "")
	f.Add(pngHeaderClaiming(1<<20, 1<<20), "image/png", "")
	ct, body := multipartBody(f,
		multipartPart{name: "scale", value: "4"},
		multipartPart{name: "image", contentType: "image/png", value: string(pngOf(f, 8, 8))})
	f.Add(body, ct, "mode=x")
	f.Add([]byte("--b\r\nContent-Disposition: form-data; name=\"image\"\r\n\r\nRIFF\x00\x00\x00\x00WEBP\r\n--b--\r\n"), "multipart/form-data; boundary=b", "")
	f.Add([]byte{}, "", "a=%zz")
	f.Fuzz(func(t *testing.T, body []byte, contentType, query string) {
		r := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(body))
		r.URL.RawQuery = query
		r.Header.Set("Content-Type", contentType)
		img, err := input.Parse(r, input.Config{MaxBytes: maxBytes, MaxPixels: maxPixels})
		if err != nil {
			var he *httpapi.Error
			var de *domain.Error
			switch {
			case errors.As(err, &he):
				if he.Status < 400 || he.Status > 499 {
					t.Fatalf("status %d for %v", he.Status, err)
				}
			case errors.As(err, &de):
				if de.Code != domain.CodeInvalid || de.Field == "" {
					t.Fatalf("domain error without a field: %v", err)
				}
			default:
				t.Fatalf("error outside the envelope: %v", err)
			}
			return
		}
		if int64(len(img.Bytes)) > maxBytes {
			t.Fatalf("accepted %d bytes over the limit %d", len(img.Bytes), maxBytes)
		}
		if img.Width <= 0 || img.Height <= 0 || int64(img.Width)*int64(img.Height) > maxPixels {
			t.Fatalf("accepted %d×%d", img.Width, img.Height)
		}
		if f, ok := input.Sniff(img.Bytes); !ok || f != img.Format {
			t.Fatalf("accepted format %q, sniffed %q", img.Format, f)
		}
	})
}
