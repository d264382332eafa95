package input_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/images/input"
)

func pngOf(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), 200, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func jpegOf(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// webpHeader is a minimal extended-format WebP file: RIFF, WEBP and a VP8X
// chunk giving the canvas size, which is all a header read needs.
func webpHeader(w, h int) []byte {
	chunk := make([]byte, 10)
	putUint24(chunk[4:], uint32(w-1))
	putUint24(chunk[7:], uint32(h-1))
	var b bytes.Buffer
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, uint32(4+8+len(chunk)))
	b.WriteString("WEBPVP8X")
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(chunk)))
	b.Write(chunk)
	return b.Bytes()
}

func putUint24(b []byte, v uint32) { b[0], b[1], b[2] = byte(v), byte(v>>8), byte(v>>16) }

// pngHeaderClaiming is a PNG signature and IHDR claiming w×h pixels with no
// image data: a decompression bomb's header.
func pngHeaderClaiming(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	_ = binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	b.WriteString("IHDR")
	b.Write(ihdr)
	b.Write([]byte{0, 0, 0, 0}) // CRC, not checked by DecodeConfig
	return b.Bytes()
}

type multipartPart struct {
	name, filename, contentType, value string
}

func multipartBody(t testing.TB, parts ...multipartPart) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		disp := `form-data; name="` + p.name + `"`
		if p.filename != "" {
			disp += `; filename="` + p.filename + `"`
		}
		h.Set("Content-Disposition", disp)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(p.value))
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), buf.Bytes()
}

func request(target, contentType string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r
}

// status maps err as the HTTP edge does: the *httpapi.Error's status, 422
// for a validation *domain.Error, 0 otherwise.
func status(err error) (int, string) {
	var he *httpapi.Error
	if errors.As(err, &he) {
		return he.Status, ""
	}
	var de *domain.Error
	if errors.As(err, &de) && de.Code == domain.CodeInvalid {
		return http.StatusUnprocessableEntity, de.Field
	}
	return 0, ""
}

func TestParse(t *testing.T) {
	small := input.Config{MaxBytes: 64 << 10, MaxPixels: 100 * 100}
	png40x30 := pngOf(t, 40, 30)
	jpg20x10 := jpegOf(t, 20, 10)
	mpCT, mpBody := multipartBody(t,
		multipartPart{name: "scale", value: "4"},
		multipartPart{name: "image", filename: "a.png", contentType: "image/png", value: string(png40x30)})
	mpOctetCT, mpOctet := multipartBody(t,
		multipartPart{name: "image", filename: "a.jpg", contentType: "application/octet-stream", value: string(jpg20x10)})
	mpNoImageCT, mpNoImage := multipartBody(t, multipartPart{name: "scale", value: "2"})
	mpTwiceCT, mpTwice := multipartBody(t,
		multipartPart{name: "image", contentType: "image/png", value: string(png40x30)},
		multipartPart{name: "image", contentType: "image/png", value: string(png40x30)})
	mpLieCT, mpLie := multipartBody(t,
		multipartPart{name: "image", contentType: "image/jpeg", value: string(png40x30)})
	mpDupCT, mpDup := multipartBody(t,
		multipartPart{name: "scale", value: "2"},
		multipartPart{name: "image", contentType: "image/png", value: string(png40x30)})
	mpLongCT, mpLong := multipartBody(t,
		multipartPart{name: "prompt", value: strings.Repeat("p", 5000)},
		multipartPart{name: "image", contentType: "image/png", value: string(png40x30)})
	mpBigCT, mpBig := multipartBody(t,
		multipartPart{name: "image", contentType: "image/png", value: string(bytes.Repeat([]byte{1}, 70<<10))})

	for _, tc := range []struct {
		name        string
		target      string
		contentType string
		body        []byte
		cfg         input.Config
		wantStatus  int
		wantField   string
		wantFormat  input.Format
		wantW       int
		wantH       int
		wantOpts    map[string]string
	}{
		{name: "png body with options", target: "/x?scale=2&mode=fast", contentType: "image/png", body: png40x30,
			cfg: small, wantFormat: input.PNG, wantW: 40, wantH: 30, wantOpts: map[string]string{"scale": "2", "mode": "fast"}},
		{name: "jpeg body", target: "/x", contentType: "image/jpeg", body: jpg20x10,
			cfg: small, wantFormat: input.JPEG, wantW: 20, wantH: 10, wantOpts: map[string]string{}},
		{name: "image/jpg alias", target: "/x", contentType: "image/jpg", body: jpg20x10,
			cfg: small, wantFormat: input.JPEG, wantW: 20, wantH: 10, wantOpts: map[string]string{}},
		{name: "webp header", target: "/x", contentType: "image/webp", body: webpHeader(100, 50),
			cfg: small, wantFormat: input.WebP, wantW: 100, wantH: 50, wantOpts: map[string]string{}},
		{name: "default limits accept a small image", target: "/x", contentType: "image/png", body: png40x30,
			wantFormat: input.PNG, wantW: 40, wantH: 30, wantOpts: map[string]string{}},
		{name: "multipart with option field", target: "/x?mode=fast", contentType: mpCT, body: mpBody,
			cfg: small, wantFormat: input.PNG, wantW: 40, wantH: 30, wantOpts: map[string]string{"scale": "4", "mode": "fast"}},
		{name: "multipart octet-stream part is sniffed", target: "/x", contentType: mpOctetCT, body: mpOctet,
			cfg: small, wantFormat: input.JPEG, wantW: 20, wantH: 10, wantOpts: map[string]string{}},

		{name: "declared jpeg but png bytes", target: "/x", contentType: "image/jpeg", body: png40x30, cfg: small, wantStatus: 415},
		{name: "declared webp but png bytes", target: "/x", contentType: "image/webp", body: png40x30, cfg: small, wantStatus: 415},
		{name: "gif", target: "/x", contentType: "image/gif", body: []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), cfg: small, wantStatus: 415},
		{name: "text body", target: "/x", contentType: "text/plain", body: []byte("hello"), cfg: small, wantStatus: 415},
		{name: "json body", target: "/x", contentType: "application/json", body: []byte(`{"image":"x"}`), cfg: small, wantStatus: 415},
		{name: "no content type", target: "/x", body: png40x30, cfg: small, wantStatus: 415},
		{name: "malformed content type", target: "/x", contentType: "image/png; ===", body: png40x30, cfg: small, wantStatus: 415},
		{name: "multipart part declares another type", target: "/x", contentType: mpLieCT, body: mpLie, cfg: small, wantStatus: 415},

		{name: "too large body", target: "/x", contentType: "image/png", body: append(pngOf(t, 40, 30), make([]byte, 64<<10)...), cfg: small, wantStatus: 413},
		{name: "too large multipart image", target: "/x", contentType: mpBigCT, body: mpBig, cfg: small, wantStatus: 413},

		{name: "empty body", target: "/x", contentType: "image/png", cfg: small, wantStatus: 422, wantField: "image"},
		{name: "too many pixels png", target: "/x", contentType: "image/png", body: pngOf(t, 101, 100), cfg: small, wantStatus: 422, wantField: "image"},
		{name: "png bomb header over default limit", target: "/x", contentType: "image/png", body: pngHeaderClaiming(50000, 50000), wantStatus: 422, wantField: "image"},
		{name: "webp canvas over default limit", target: "/x", contentType: "image/webp", body: webpHeader(10000, 10000), wantStatus: 422, wantField: "image"},
		{name: "truncated png", target: "/x", contentType: "image/png", body: png40x30[:20], cfg: small, wantStatus: 422, wantField: "image"},
		{name: "riff webp with no chunk", target: "/x", contentType: "image/webp", body: []byte("RIFF\x04\x00\x00\x00WEBP"), cfg: small, wantStatus: 422, wantField: "image"},
		{name: "multipart without image", target: "/x", contentType: mpNoImageCT, body: mpNoImage, cfg: small, wantStatus: 422, wantField: "image"},
		{name: "multipart image twice", target: "/x", contentType: mpTwiceCT, body: mpTwice, cfg: small, wantStatus: 422, wantField: "image"},
		{name: "multipart without boundary", target: "/x", contentType: "multipart/form-data", body: mpBody, cfg: small, wantStatus: 422, wantField: "image"},
		{name: "multipart malformed", target: "/x", contentType: "multipart/form-data; boundary=zzz", body: []byte("garbage"), cfg: small, wantStatus: 422, wantField: "image"},
		{name: "option twice in query", target: "/x?scale=2&scale=4", contentType: "image/png", body: png40x30, cfg: small, wantStatus: 422, wantField: "scale"},
		{name: "option in query and field", target: "/x?scale=4", contentType: mpDupCT, body: mpDup, cfg: small, wantStatus: 422, wantField: "scale"},
		{name: "option too long", target: "/x", contentType: mpLongCT, body: mpLong, cfg: small, wantStatus: 422, wantField: "prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := input.Parse(request(tc.target, tc.contentType, tc.body), tc.cfg)
			if tc.wantStatus != 0 {
				st, field := status(err)
				if st != tc.wantStatus || field != tc.wantField {
					t.Fatalf("Parse = %v, %v: want status %d field %q, got %d %q", img, err, tc.wantStatus, tc.wantField, st, field)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if img.Format != tc.wantFormat || img.Width != tc.wantW || img.Height != tc.wantH {
				t.Fatalf("got %s %d×%d, want %s %d×%d", img.Format, img.Width, img.Height, tc.wantFormat, tc.wantW, tc.wantH)
			}
			if len(img.Options) != len(tc.wantOpts) {
				t.Fatalf("options %v, want %v", img.Options, tc.wantOpts)
			}
			for k, v := range tc.wantOpts {
				if img.Options[k] != v {
					t.Fatalf("options %v, want %v", img.Options, tc.wantOpts)
				}
			}
			if len(img.Bytes) == 0 {
				t.Fatal("no bytes returned")
			}
		})
	}
}

func TestParseErrorsUseTheEnvelope(t *testing.T) {
	_, err := input.Parse(request("/x", "image/jpeg", pngOf(t, 4, 4)), input.Config{})
	var he *httpapi.Error
	if !errors.As(err, &he) || he.Code != httpapi.CodeUnsupportedMediaType {
		t.Fatalf("err = %v, want unsupported_media_type", err)
	}
	if he.Details["accepted"] == nil {
		t.Fatalf("details %v lack the accepted types", he.Details)
	}
	_, err = input.Parse(request("/x", "image/png", make([]byte, 11)), input.Config{MaxBytes: 10})
	if !errors.As(err, &he) || he.Code != httpapi.CodePayloadTooLarge || he.Details["max_bytes"] != int64(10) {
		t.Fatalf("err = %v, want payload_too_large with max_bytes 10", err)
	}
}

// endless is a body that never ends: Parse must stop at the limit. Its
// bytes are 0xff, or short lines when lines is set.
type endless struct {
	read  int64
	lines bool
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0xff
		if e.lines {
			p[i] = "preamble\r\n"[(e.read+int64(i))%10]
		}
	}
	e.read += int64(len(p))
	return len(p), nil
}

func TestParseStopsReadingAtTheLimit(t *testing.T) {
	const limit = 1 << 20
	for _, tc := range []struct{ name, ct string }{
		{"raw body", "image/png"},
		{"multipart", "multipart/form-data; boundary=b"},
		{"multipart preamble", "multipart/form-data; boundary=b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &endless{lines: tc.name == "multipart preamble"}
			var src io.Reader = body
			if tc.name == "multipart" {
				src = io.MultiReader(strings.NewReader("--b\r\nContent-Disposition: form-data; name=\"image\"\r\n\r\n"), body)
			}
			r := httptest.NewRequest(http.MethodPost, "/x", src)
			r.ContentLength = -1
			r.Header.Set("Content-Type", tc.ct)
			_, err := input.Parse(r, input.Config{MaxBytes: limit})
			if st, _ := status(err); st != http.StatusRequestEntityTooLarge {
				t.Fatalf("err = %v, want 413", err)
			}
			if body.read > limit+(1<<20) {
				t.Fatalf("read %d bytes of an endless body with a limit of %d", body.read, limit)
			}
		})
	}
}

func TestParseRefusesDeclaredLengthWithoutReading(t *testing.T) {
	body := &endless{}
	r := httptest.NewRequest(http.MethodPost, "/x", body)
	r.ContentLength = input.DefaultMaxBytes + 1
	r.Header.Set("Content-Type", "image/png")
	if _, err := input.Parse(r, input.Config{}); func() int { s, _ := status(err); return s }() != 413 {
		t.Fatalf("err = %v, want 413", err)
	}
	if body.read != 0 {
		t.Fatalf("read %d bytes, want none", body.read)
	}
}

func TestSniff(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want input.Format
		ok   bool
	}{
		{"png", pngOf(t, 2, 2), input.PNG, true},
		{"jpeg", jpegOf(t, 2, 2), input.JPEG, true},
		{"webp", webpHeader(2, 2), input.WebP, true},
		{"riff wave", []byte("RIFF\x00\x00\x00\x00WAVEfmt "), "", false},
		{"gif", []byte("GIF89a"), "", false},
		{"empty", nil, "", false},
		{"text", []byte("hello"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := input.Sniff(tc.data)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Sniff = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
