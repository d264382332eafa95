package photoroom_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/images/provider/photoroom"
)

const (
	apiKey = "sk_pr_test_NOTREAL0123456789abcdef"
	prompt = "on a marble kitchen counter, soft morning light"
)

// pngBytes is a small real PNG of the given size.
func pngBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(x), G: uint8(y), B: 200, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// received is one request the fake provider took, its form decoded.
type received struct {
	Method, Path, RawQuery, APIKey string
	Fields                         map[string][]string
	Files                          map[string]filePart
	FormErr                        error
}

type filePart struct {
	Filename, ContentType string
	Body                  []byte
}

// fakeProvider serves the documented contract of POST /v2/edit: it records
// each request and answers with the handler it was given, by default the
// image it holds with the documented headers.
type fakeProvider struct {
	srv *httptest.Server

	mu      sync.Mutex
	got     []received
	answer  http.HandlerFunc
	resultB []byte
}

func newFakeProvider(t *testing.T, answer http.HandlerFunc) *fakeProvider {
	t.Helper()
	fp := &fakeProvider{answer: answer, resultB: pngBytes(t, 32, 24)}
	fp.srv = httptest.NewServer(http.HandlerFunc(fp.serve))
	t.Cleanup(fp.srv.Close)
	return fp
}

func (fp *fakeProvider) serve(w http.ResponseWriter, r *http.Request) {
	rec := received{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, APIKey: r.Header.Get("x-api-key"),
		Fields: map[string][]string{}, Files: map[string]filePart{}}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		rec.FormErr = fmt.Errorf("content type %q", r.Header.Get("Content-Type"))
	} else {
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				rec.FormErr = err
				break
			}
			b, _ := io.ReadAll(p)
			if p.FileName() != "" {
				rec.Files[p.FormName()] = filePart{Filename: p.FileName(), ContentType: p.Header.Get("Content-Type"), Body: b}
			} else {
				rec.Fields[p.FormName()] = append(rec.Fields[p.FormName()], string(b))
			}
		}
	}
	fp.mu.Lock()
	fp.got = append(fp.got, rec)
	fp.mu.Unlock()
	if fp.answer != nil {
		fp.answer(w, r)
		return
	}
	if rec.APIKey != apiKey {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("pr-ai-background-seed", "123456")
	w.Header().Set("x-uncertainty-score", "0.12")
	w.Header().Set("pr-edit-further-url", "https://app.photoroom.com/edit/abc")
	w.Write(fp.resultB)
}

func (fp *fakeProvider) requests() []received {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return append([]received(nil), fp.got...)
}

func newClient(t *testing.T, cfg photoroom.Config) *photoroom.Client {
	t.Helper()
	if cfg.APIKey == "" {
		cfg.APIKey = apiKey
	}
	c, err := photoroom.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func asProviderError(t *testing.T, err error) *photoroom.ProviderError {
	t.Helper()
	var pe *photoroom.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *ProviderError", err, err)
	}
	return pe
}

// noSecrets fails when the error's text holds the key, the prompt or a
// provider's free text.
func noSecrets(t *testing.T, err error, extra ...string) {
	t.Helper()
	for _, s := range append([]string{apiKey, prompt, "marble"}, extra...) {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("error %q holds %q", err, s)
		}
	}
}

func TestGenerateSendsTheDocumentedRequest(t *testing.T) {
	fp := newFakeProvider(t, nil)
	c := newClient(t, photoroom.Config{BaseURL: fp.srv.URL + "/"})
	img := pngBytes(t, 40, 30)

	res, err := c.Generate(context.Background(), photoroom.Scene{Image: img, Prompt: prompt, OutputSize: "1024x768", Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	got := fp.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	r := got[0]
	if r.Method != http.MethodPost || r.Path != "/v2/edit" || r.RawQuery != "" {
		t.Fatalf("request %s %s?%s, want POST /v2/edit with no query", r.Method, r.Path, r.RawQuery)
	}
	if r.APIKey != apiKey {
		t.Fatalf("x-api-key %q", r.APIKey)
	}
	if r.FormErr != nil {
		t.Fatal(r.FormErr)
	}
	want := map[string][]string{
		"background.prompt": {prompt},
		"export.format":     {"png"},
		"outputSize":        {"1024x768"},
		"background.seed":   {"42"},
	}
	if fmt.Sprint(r.Fields) != fmt.Sprint(want) {
		t.Fatalf("fields %v, want %v (only the prompt and the output options)", r.Fields, want)
	}
	if len(r.Files) != 1 {
		t.Fatalf("file parts %v, want imageFile only", r.Files)
	}
	f, ok := r.Files["imageFile"]
	if !ok || f.Filename != "image.png" || f.ContentType != "image/png" || !bytes.Equal(f.Body, img) {
		t.Fatalf("imageFile part %q %q (%d bytes, same=%v)", f.Filename, f.ContentType, len(f.Body), bytes.Equal(f.Body, img))
	}
	if !bytes.Equal(res.Image, fp.resultB) || res.ContentType != "image/png" {
		t.Fatalf("result %d bytes %q", len(res.Image), res.ContentType)
	}
	if res.Seed != 123456 || !res.HasUncertainty || res.UncertaintyScore != 0.12 {
		t.Fatalf("seed %d, uncertainty %v %v", res.Seed, res.UncertaintyScore, res.HasUncertainty)
	}
}

func TestGenerateOmitsOptionalFieldsAndNamesTheFileByFormat(t *testing.T) {
	fp := newFakeProvider(t, nil)
	c := newClient(t, photoroom.Config{BaseURL: fp.srv.URL})
	// A WebP header is enough for the sniffer; the provider decodes it.
	webp := append([]byte("RIFF\x24\x00\x00\x00WEBPVP8 "), make([]byte, 32)...)
	if _, err := c.Generate(context.Background(), photoroom.Scene{Image: webp, Prompt: "a beach", Format: "webp"}); err != nil {
		t.Fatal(err)
	}
	r := fp.requests()[0]
	if fmt.Sprint(r.Fields) != fmt.Sprint(map[string][]string{"background.prompt": {"a beach"}, "export.format": {"webp"}}) {
		t.Fatalf("fields %v", r.Fields)
	}
	if f := r.Files["imageFile"]; f.Filename != "image.webp" || f.ContentType != "image/webp" {
		t.Fatalf("file part %q %q", f.Filename, f.ContentType)
	}
}

func TestGenerateRefusesAnInvalidSceneWithoutARequest(t *testing.T) {
	fp := newFakeProvider(t, nil)
	c := newClient(t, photoroom.Config{BaseURL: fp.srv.URL})
	img := pngBytes(t, 8, 8)
	cases := []struct {
		name  string
		scene photoroom.Scene
		field string
	}{
		{"no image", photoroom.Scene{Prompt: prompt}, "image"},
		{"gif", photoroom.Scene{Image: []byte("GIF89a\x01\x00\x01\x00"), Prompt: prompt}, "image"},
		{"blank prompt", photoroom.Scene{Image: img, Prompt: "  "}, "prompt"},
		{"control character", photoroom.Scene{Image: img, Prompt: "a\x00b"}, "prompt"},
		{"invalid UTF-8", photoroom.Scene{Image: img, Prompt: "a\xffb"}, "prompt"},
		{"long prompt", photoroom.Scene{Image: img, Prompt: strings.Repeat("a", photoroom.MaxPromptBytes+1)}, "prompt"},
		{"output size", photoroom.Scene{Image: img, Prompt: prompt, OutputSize: "0x10"}, "output_size"},
		{"output size words", photoroom.Scene{Image: img, Prompt: prompt, OutputSize: "huge"}, "output_size"},
		{"format", photoroom.Scene{Image: img, Prompt: prompt, Format: "gif"}, "format"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Generate(context.Background(), tc.scene)
			pe := asProviderError(t, err)
			var fe *photoroom.FieldError
			if pe.Code != photoroom.CodeInvalidRequest || pe.Retryable || !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("error %v, want a final invalid_request on %q", err, tc.field)
			}
			noSecrets(t, err)
		})
	}
	if n := len(fp.requests()); n != 0 {
		t.Fatalf("%d requests made for invalid scenes", n)
	}
}

func TestGenerateClassifiesTheDocumentedErrors(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name         string
		status       int
		retryAfter   string
		body         []byte
		code         string
		retryable    bool
		wait         time.Duration
		providerType string
	}{
		{"400", 400, "", readTestdata(t, "error_400_bad_request.json"), photoroom.CodeInvalidRequest, false, 0, ""},
		{"400 v1 shape", 400, "", readTestdata(t, "error_400_v1_missing_image.json"), photoroom.CodeInvalidRequest, false, 0, "missing_image"},
		{"401", 401, "", []byte(`{"error":{"message":"Invalid API key"}}`), photoroom.CodeUnauthorized, false, 0, ""},
		{"402", 402, "", readTestdata(t, "error_402_payment.json"), photoroom.CodeCreditsExhausted, false, 0, ""},
		{"403 without body", 403, "", nil, photoroom.CodeForbidden, false, 0, ""},
		{"404", 404, "", []byte("not found"), photoroom.CodeRejected, false, 0, ""},
		{"429 seconds", 429, "30", []byte(`{"error":{"message":"Too many requests"}}`), photoroom.CodeRateLimited, true, 30 * time.Second, ""},
		{"500", 500, "", readTestdata(t, "error_500_unknown.json"), photoroom.CodeProviderError, true, 0, ""},
		{"503 http-date", 503, now.Add(90 * time.Second).Format(http.TimeFormat), []byte("<html>down</html>"), photoroom.CodeProviderError, true, 90 * time.Second, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fp := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				w.Write(tc.body)
			})
			c := newClient(t, photoroom.Config{BaseURL: fp.srv.URL, Now: func() time.Time { return now }})
			_, err := c.Generate(context.Background(), photoroom.Scene{Image: pngBytes(t, 8, 8), Prompt: prompt})
			pe := asProviderError(t, err)
			if pe.Code != tc.code || pe.Retryable != tc.retryable || pe.Status != tc.status || pe.RetryAfter != tc.wait || pe.ProviderType != tc.providerType {
				t.Fatalf("got %+v, want code %s retryable %v status %d wait %v type %q", pe, tc.code, tc.retryable, tc.status, tc.wait, tc.providerType)
			}
			noSecrets(t, err, "credits exhausted", "removeBackground", "Please provide", "unexpected error")
		})
	}
}

func TestGenerateRefusesARedirect(t *testing.T) {
	var hits sync.Map
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Store("hit", r.Header.Get("x-api-key"))
		w.Write(pngBytes(t, 4, 4))
	}))
	t.Cleanup(target.Close)
	fp := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/v2/edit", http.StatusTemporaryRedirect)
	})
	c := newClient(t, photoroom.Config{BaseURL: fp.srv.URL})
	_, err := c.Generate(context.Background(), photoroom.Scene{Image: pngBytes(t, 8, 8), Prompt: prompt})
	pe := asProviderError(t, err)
	if pe.Code != photoroom.CodeRedirected || pe.Retryable || pe.Status != http.StatusTemporaryRedirect {
		t.Fatalf("got %+v, want a final redirected", pe)
	}
	if _, ok := hits.Load("hit"); ok {
		t.Fatal("the redirect was followed (and the key sent to its target)")
	}
	noSecrets(t, err, target.URL)
}

func TestGenerateRefusesAnOversizeAnswer(t *testing.T) {
	const limit = 4096
	// A PNG followed by padding: the sniffer takes it, the size does not.
	big := append(pngBytes(t, 8, 8), make([]byte, 2*limit)...)
	for _, declared := range []bool{true, false} {
		t.Run(fmt.Sprintf("content-length %v", declared), func(t *testing.T) {
			fp := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "image/png")
				if declared {
					w.Header().Set("Content-Length", fmt.Sprint(len(big)))
					w.Write(big)
					return
				}
				// Chunked: the length is known only by reading.
				w.Write(big[:100])
				w.(http.Flusher).Flush()
				w.Write(big[100:])
			})
			c := newClient(t, photoroom.Config{BaseURL: fp.srv.URL, MaxResponse: limit})
			_, err := c.Generate(context.Background(), photoroom.Scene{Image: pngBytes(t, 8, 8), Prompt: prompt})
			pe := asProviderError(t, err)
			if pe.Code != photoroom.CodeAnswerTooLarge || pe.Retryable {
				t.Fatalf("got %+v, want a final answer_too_large", pe)
			}
		})
	}
	// At the limit exactly, the answer is taken.
	exact := pngBytes(t, 8, 8)
	fp := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request) { w.Write(exact) })
	c := newClient(t, photoroom.Config{BaseURL: fp.srv.URL, MaxResponse: int64(len(exact))})
	if res, err := c.Generate(context.Background(), photoroom.Scene{Image: exact, Prompt: prompt}); err != nil || !bytes.Equal(res.Image, exact) {
		t.Fatalf("answer at the limit: %v", err)
	}
}

func TestGenerateRefusesAnAnswerThatIsNotAnImage(t *testing.T) {
	for name, body := range map[string][]byte{
		"html":           []byte("<html><body>maintenance</body></html>"),
		"gif":            []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"),
		"json":           []byte(`{"result":"ok"}`),
		"empty":          nil,
		"truncated webp": []byte("RIFF"),
	} {
		t.Run(name, func(t *testing.T) {
			fp := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "image/png") // the header lies; the bytes decide
				w.Write(body)
			})
			c := newClient(t, photoroom.Config{BaseURL: fp.srv.URL})
			_, err := c.Generate(context.Background(), photoroom.Scene{Image: pngBytes(t, 8, 8), Prompt: prompt})
			pe := asProviderError(t, err)
			if pe.Code != photoroom.CodeInvalidAnswer || pe.Retryable || pe.Status != 200 {
				t.Fatalf("got %+v, want a final invalid_answer", pe)
			}
		})
	}
}

func TestGenerateStopsWhenTheContextIsCancelled(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	fp := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	c := newClient(t, photoroom.Config{BaseURL: fp.srv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Generate(ctx, photoroom.Scene{Image: pngBytes(t, 8, 8), Prompt: prompt})
		done <- err
	}()
	<-arrived
	cancel()
	select {
	case err := <-done:
		pe := asProviderError(t, err)
		if pe.Code != photoroom.CodeTimeout || !pe.Retryable || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %+v (%v), want a retryable timeout wrapping context.Canceled", pe, err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Generate did not return after its context was cancelled")
	}
}

func TestGenerateTimesOut(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	fp := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	c := newClient(t, photoroom.Config{BaseURL: fp.srv.URL, Timeout: 50 * time.Millisecond})
	_, err := c.Generate(context.Background(), photoroom.Scene{Image: pngBytes(t, 8, 8), Prompt: prompt})
	if pe := asProviderError(t, err); pe.Code != photoroom.CodeTimeout || !pe.Retryable {
		t.Fatalf("got %+v, want a retryable timeout", pe)
	}
}

func TestGenerateConnectFailed(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	c := newClient(t, photoroom.Config{BaseURL: base})
	_, err := c.Generate(context.Background(), photoroom.Scene{Image: pngBytes(t, 8, 8), Prompt: prompt})
	if pe := asProviderError(t, err); pe.Code != photoroom.CodeConnectFailed || !pe.Retryable {
		t.Fatalf("got %+v, want a retryable connect_failed", pe)
	}
	noSecrets(t, err)
}

func TestConfigValidate(t *testing.T) {
	_, err := photoroom.New(photoroom.Config{BaseURL: "ftp://user:" + apiKey + "@x/?q#f", APIKey: "bad key\n", Timeout: -1, MaxResponse: -1})
	if err == nil {
		t.Fatal("invalid configuration accepted")
	}
	for _, want := range []string{"base URL", "API key", "timeout", "response limit"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name %s", err, want)
		}
	}
	noSecrets(t, err, "bad key")
	if _, err := photoroom.New(photoroom.Config{}); err == nil || !strings.Contains(err.Error(), "API key is empty") {
		t.Fatalf("empty key: %v", err)
	}
	if _, err := photoroom.New(photoroom.Config{APIKey: apiKey}); err != nil {
		t.Fatalf("default base URL refused: %v", err)
	}
}

// FuzzParseError: whatever the status, the Retry-After and the bytes, the
// parser never panics and returns a known code, retryable exactly for 408,
// 429 and 5xx, with a safe provider type and an error text that holds none
// of the body's words beyond that type.
func FuzzParseError(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b := readTestdata(f, e.Name())
		f.Add(400, "", b)
		f.Add(402, "", b)
		f.Add(429, "30", b)
	}
	f.Add(503, "Fri, 27 Nov 2026 12:01:30 GMT", []byte("<html>"))
	f.Add(302, "", []byte(`{"type":"Secret Words"}`))
	f.Add(500, "-1", []byte(`{"error":null,"type":"x"}`))
	codes := map[string]bool{
		photoroom.CodeInvalidRequest: true, photoroom.CodeUnauthorized: true, photoroom.CodeCreditsExhausted: true,
		photoroom.CodeForbidden: true, photoroom.CodeRejected: true, photoroom.CodeRateLimited: true,
		photoroom.CodeProviderError: true, photoroom.CodeTimeout: true, photoroom.CodeRedirected: true,
	}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, status int, retryAfter string, body []byte) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		pe := photoroom.ParseError(status, h, body, now)
		if pe == nil || !codes[pe.Code] {
			t.Fatalf("code %+v", pe)
		}
		wantRetry := status == 408 || status == 429 || status >= 500
		if pe.Retryable != wantRetry {
			t.Fatalf("status %d retryable %v", status, pe.Retryable)
		}
		if pe.RetryAfter < 0 || pe.RetryAfter > 24*time.Hour || (!wantRetry && pe.RetryAfter != 0) {
			t.Fatalf("retry after %v", pe.RetryAfter)
		}
		for _, c := range pe.ProviderType {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
				t.Fatalf("provider type %q", pe.ProviderType)
			}
		}
		msg := pe.Error()
		if len(msg) > 200 {
			t.Fatalf("error text %d bytes", len(msg))
		}
		for i := 0; i < len(msg); i++ {
			if msg[i] < 0x20 || msg[i] > 0x7e {
				t.Fatalf("error text %q", msg)
			}
		}
	})
}
