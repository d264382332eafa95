package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	xdraw "golang.org/x/image/draw"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/images/engine/bgremove"
	"github.com/cgp-platform/cgp/images/runner"
	"github.com/cgp-platform/cgp/images/store/localfs"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// modelFiles are the background-removal artefacts `make models` puts in
// .cache/models at the repository's root (CGP_ONNXRUNTIME_LIB and
// CGP_BGREMOVE_MODEL override them). Missing artefacts fail the test:
// make test fetches them first.
func modelFiles(t *testing.T) (lib, model string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	lib = filepath.Join(root, ".cache", "models", bgremove.LibraryFile)
	model = filepath.Join(root, ".cache", "models", bgremove.ModelFile)
	if p := os.Getenv("CGP_ONNXRUNTIME_LIB"); p != "" {
		lib = p
	}
	if p := os.Getenv("CGP_BGREMOVE_MODEL"); p != "" {
		model = p
	}
	for _, p := range []string{lib, model} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("background-removal artefact missing: %v; run `make models` (make test does it first)", err)
		}
	}
	return lib, model
}

// encodePNG encodes img as PNG.
func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// discPhoto is a red disc on a light grey background, w×h.
func discPhoto(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.RGBA{236, 236, 232, 255}), image.Point{}, draw.Src)
	cx, cy, r := float64(w)/2, float64(h)/2, float64(min(w, h))*0.3
	for y := range h {
		for x := range w {
			if math.Hypot(float64(x)+0.5-cx, float64(y)+0.5-cy) <= r {
				img.Set(x, y, color.RGBA{200, 30, 40, 255})
			}
		}
	}
	return img
}

// cutOut is a product already cut out: an opaque blue square on a
// transparent canvas.
func cutOut(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, image.Rect(w/4, h/4, 3*w/4, 3*h/4), image.NewUniform(color.NRGBA{30, 60, 200, 255}), image.Point{}, draw.Src)
	return img
}

// texture is a synthetic photograph: smooth gradients with fine detail.
func texture(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			r := 128 + 100*math.Sin(fx*9+fy*3)
			g := 128 + 90*math.Cos(fy*11-fx*2)
			b := 128 + 80*math.Sin((fx+fy)*17)
			img.Set(x, y, color.RGBA{uint8(r), uint8(g), uint8(b), 255})
		}
	}
	return img
}

// psnr is the peak signal-to-noise ratio of b against a (same size), in dB.
func psnr(a, b image.Image) float64 {
	var sum float64
	n := 0
	bd := a.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			r1, g1, b1, _ := a.At(x, y).RGBA()
			r2, g2, b2, _ := b.At(x, y).RGBA()
			for _, d := range []float64{float64(r1>>8) - float64(r2>>8), float64(g1>>8) - float64(g2>>8), float64(b1>>8) - float64(b2>>8)} {
				sum += d * d
				n++
			}
		}
	}
	return 10 * math.Log10(255*255/(sum/float64(n)))
}

// imageAPI posts an image operation with an image-API key.
func (s *testServer) imageOp(t *testing.T, key, path string, body []byte, contentType string, extra ...string) response {
	t.Helper()
	h := map[string]string{"X-API-Key": key, "Content-Type": contentType}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return do(t, http.MethodPost, s.base+path, body, h)
}

// waitOperation polls GET /api/v1/images/{id} until the operation
// succeeded or failed and returns its attributes.
func (s *testServer) waitOperation(t *testing.T, v *openapitest.Validator, key, id string) map[string]any {
	t.Helper()
	var attrs map[string]any
	eventually(t, 5*time.Minute, "image operation "+id+" finished", func() bool {
		r := s.get(t, "/api/v1/images/"+id, "", "X-API-Key", key)
		if r.status == http.StatusNotFound {
			return false // not projected yet
		}
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != 200 {
			t.Fatalf("get operation: %d %s", r.status, r.body)
		}
		attrs = r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
		return attrs["status"] == "succeeded" || attrs["status"] == "failed"
	})
	return attrs
}

// result downloads an operation's result and decodes it.
func (s *testServer) result(t *testing.T, key, id string) (image.Image, string, response) {
	t.Helper()
	r := s.get(t, "/api/v1/images/"+id+"/result", "", "X-API-Key", key)
	if r.status != 200 {
		t.Fatalf("result of %s: %d %s", id, r.status, r.body)
	}
	img, format, err := image.Decode(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("result of %s: %v", id, err)
	}
	return img, format, r
}

func opID(t *testing.T, r response) string {
	t.Helper()
	id, _ := r.json(t)["data"].(map[string]any)["id"].(string)
	if !strings.HasPrefix(id, "img_") {
		t.Fatalf("operation id %q in %s", id, r.body)
	}
	return id
}

func usageCredits(t *testing.T, s *testServer, key string) (map[string]any, map[string]any) {
	t.Helper()
	r := s.get(t, "/api/v1/usage", "", "X-API-Key", key)
	if r.status != 200 {
		t.Fatalf("usage: %d %s", r.status, r.body)
	}
	attrs := r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
	return attrs["ai_credits"].(map[string]any), attrs["image_operations"].(map[string]any)
}

// TestBackgroundRemovalWithTheRealModel removes the background of a red
// disc on a light background over HTTP, with the real model: the PNG that
// comes back is transparent in its corners and opaque on the disc, and the
// credit is consumed.
func TestBackgroundRemovalWithTheRealModel(t *testing.T) {
	dir := t.TempDir()
	lib, model := modelFiles(t)
	s := startServerWith(t, dir, func(c *Config) { c.ONNXRuntimeLib, c.BGRemoveModel = lib, model })
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "cutout.example.com", "growth", "customers:read")
	key := cli(t, dir, "image-keys", "mint", "--shop", tn.shopID, "--scopes", "images:write,usage:read")["token"].(string)

	r := s.imageOp(t, key, "/api/v1/images/background-removals", encodePNG(t, discPhoto(320, 240)), "image/png")
	v.ValidateResponse(t, r.req, r.resp, r.body)
	if r.status != http.StatusAccepted || r.header.Get("X-Credits-Charged") != "1" || r.header.Get("X-Credits-Remaining") != "99" {
		t.Fatalf("accepted: %d %v %s", r.status, r.header, r.body)
	}
	id := opID(t, r)
	if loc := r.header.Get("Location"); loc != "/api/v1/images/"+id {
		t.Fatalf("Location %q", loc)
	}
	attrs := s.waitOperation(t, v, key, id)
	if attrs["status"] != "succeeded" || attrs["engine"] != "isnet-onnxruntime" || attrs["credits_charged"] != 1.0 {
		t.Fatalf("operation %v", attrs)
	}
	img, format, res := s.result(t, key, id)
	if format != "png" || res.header.Get("Content-Type") != "image/png" {
		t.Fatalf("result format %s, %s", format, res.header.Get("Content-Type"))
	}
	if b := img.Bounds(); b.Dx() != 320 || b.Dy() != 240 {
		t.Fatalf("result size %v", b)
	}
	for _, p := range []image.Point{{2, 2}, {317, 2}, {2, 237}, {317, 237}} {
		if _, _, _, a := img.At(p.X, p.Y).RGBA(); a>>8 >= 32 {
			t.Errorf("corner %v alpha %d, want transparent", p, a>>8)
		}
	}
	if _, _, _, a := img.At(160, 120).RGBA(); a>>8 <= 224 {
		t.Errorf("centre alpha %d, want opaque", a>>8)
	}
	// The result is immutable: its digest is its ETag.
	etag := res.header.Get("ETag")
	if nm := s.get(t, "/api/v1/images/"+id+"/result", "", "X-API-Key", key, "If-None-Match", etag); nm.status != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", nm.status)
	}
	eventually(t, minEventually, "the credit consumed in the usage", func() bool {
		ai, ops := usageCredits(t, s, key)
		return ai["used"] == 1.0 && ai["reserved"] == 0.0 && ai["remaining"] == 99.0 && ops["background_removals"] == 1.0
	})
}

// TestUpscaleOverHTTP doubles and quadruples a picture's dimensions, and
// the upscale of a downscaled photo is closer to the original than a
// nearest-neighbour upscale; options are checked before anything is
// charged.
func TestUpscaleOverHTTP(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "upscale.example.com", "pro", "customers:read")
	key := cli(t, dir, "image-keys", "mint", "--shop", tn.shopID, "--scopes", "images:write,usage:read")["token"].(string)

	original := texture(256, 192)
	for _, scale := range []int{2, 4} {
		small := image.NewRGBA(image.Rect(0, 0, 256/scale, 192/scale))
		xdraw.CatmullRom.Scale(small, small.Bounds(), original, original.Bounds(), xdraw.Src, nil)
		r := s.imageOp(t, key, "/api/v1/images/upscales?scale="+strconv.Itoa(scale), encodePNG(t, small), "image/png", "Prefer", "wait=60")
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != http.StatusOK && r.status != http.StatusAccepted {
			t.Fatalf("upscale x%d: %d %s", scale, r.status, r.body)
		}
		wantCost := map[int]string{2: "1", 4: "2"}[scale]
		if r.header.Get("X-Credits-Charged") != wantCost || r.header.Get("Preference-Applied") != "wait=30" {
			t.Fatalf("upscale x%d headers %v", scale, r.header)
		}
		id := opID(t, r)
		attrs := s.waitOperation(t, v, key, id)
		if attrs["status"] != "succeeded" || attrs["engine"] != "upscale" {
			t.Fatalf("upscale x%d: %v", scale, attrs)
		}
		if m := attrs["metadata"].(map[string]any); m["method"] != "catmull-rom+unsharp" {
			t.Fatalf("metadata %v", m)
		}
		img, _, _ := s.result(t, key, id)
		if b := img.Bounds(); b.Dx() != 256 || b.Dy() != 192 {
			t.Fatalf("x%d result %v, want 256x192", scale, b)
		}
		nearest := image.NewRGBA(original.Bounds())
		xdraw.NearestNeighbor.Scale(nearest, nearest.Bounds(), small, small.Bounds(), xdraw.Src, nil)
		got, base := psnr(original, img), psnr(original, nearest)
		if got <= base {
			t.Errorf("x%d: PSNR %.2f dB not above nearest-neighbour's %.2f dB", scale, got, base)
		}
	}

	// Refused before any charge: a bad scale (422 naming it), a picture
	// that would pass the output limit, a body that is not an image (415).
	bad := []struct {
		path, ct string
		body     []byte
		status   int
		field    string
	}{
		{"/api/v1/images/upscales?scale=3", "image/png", encodePNG(t, texture(8, 8)), 422, "scale"},
		{"/api/v1/images/upscales?scale=2&sharpen=yes", "image/png", encodePNG(t, texture(8, 8)), 422, "sharpen"},
		{"/api/v1/images/upscales?scale=2", "text/plain", []byte("hello"), 415, ""},
		{"/api/v1/images/upscales?scale=2", "image/jpeg", encodePNG(t, texture(8, 8)), 415, ""},
		{"/api/v1/images/background-removals", "image/png", []byte{}, 422, "image"},
	}
	for _, b := range bad {
		r := s.imageOp(t, key, b.path, b.body, b.ct)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != b.status {
			t.Fatalf("%s (%s): %d %s, want %d", b.path, b.ct, r.status, r.body, b.status)
		}
		if b.field != "" {
			if f := r.json(t)["error"].(map[string]any)["details"].(map[string]any)["field"]; f != b.field {
				t.Fatalf("%s: field %v, want %s", b.path, f, b.field)
			}
		}
	}
	// A retried upload with the same Idempotency-Key is answered the first
	// operation: one run, one charge.
	pic := encodePNG(t, texture(40, 30))
	first := s.imageOp(t, key, "/api/v1/images/upscales", pic, "image/png", "Idempotency-Key", "retry-0001")
	again := s.imageOp(t, key, "/api/v1/images/upscales", pic, "image/png", "Idempotency-Key", "retry-0001")
	v.ValidateResponse(t, again.req, again.resp, again.body)
	if first.status != http.StatusAccepted || again.status != http.StatusAccepted || opID(t, first) != opID(t, again) ||
		again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("X-Credits-Charged") != "1" {
		t.Fatalf("idempotent retry: %d %s / %d %v %s", first.status, first.body, again.status, again.header, again.body)
	}
	if other := s.imageOp(t, key, "/api/v1/images/upscales?scale=4", pic, "image/png", "Idempotency-Key", "retry-0001"); other.status != http.StatusConflict {
		t.Fatalf("the key reused for another request: %d %s", other.status, other.body)
	}
	eventually(t, minEventually, "four credits used and none reserved", func() bool {
		ai, ops := usageCredits(t, s, key)
		return ai["used"] == 4.0 && ai["reserved"] == 0.0 && ops["upscales"] == 3.0
	})
	// The operator's list.
	list := cli(t, dir, "images", "list", "--shop", tn.shopID)
	if ops := list["operations"].([]any); len(ops) != 3 {
		t.Fatalf("cgp images list: %v", list)
	}
}

// TestLifestyleScenes: without a provider the embedded studio composites
// the cut-out product; with one, the documented request goes to the
// provider (served by httptest) and its image comes back; a provider that
// fails fails the operation and releases its credits.
func TestLifestyleScenes(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		dir := t.TempDir()
		s := startServer(t, dir)
		v := openapitest.NewValidator(t)
		tn := newTenant(t, dir, "studio.example.com", "growth", "customers:read")
		key := cli(t, dir, "image-keys", "mint", "--shop", tn.shopID, "--scopes", "images:write")["token"].(string)
		r := s.imageOp(t, key, "/api/v1/images/lifestyle-scenes?scene=marble-surface", encodePNG(t, cutOut(200, 300)), "image/png")
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != http.StatusAccepted || r.header.Get("X-Credits-Charged") != "1" {
			t.Fatalf("scene: %d %v %s", r.status, r.header, r.body)
		}
		attrs := s.waitOperation(t, v, key, opID(t, r))
		m := attrs["metadata"].(map[string]any)
		if attrs["status"] != "succeeded" || attrs["engine"] != "embedded-studio" || m["scene"] != "marble-surface" || m["cutout"] != "supplied" {
			t.Fatalf("scene: %v", attrs)
		}
		img, _, _ := s.result(t, key, opID(t, r))
		if b := img.Bounds(); b.Dx() != 1024 || b.Dy() != 1024 {
			t.Fatalf("scene size %v", b)
		}
		// The product is in the picture: a blue pixel at the centre of its
		// placement, and the scene's surface around it.
		blue := 0
		for y := 0; y < 1024; y += 4 {
			for x := 0; x < 1024; x += 4 {
				r, g, b, _ := img.At(x, y).RGBA()
				if b>>8 > 150 && r>>8 < 80 && g>>8 < 100 {
					blue++
				}
			}
		}
		if blue < 500 {
			t.Fatalf("the product covers %d sampled pixels", blue)
		}
		// A prompt needs a provider: 422 naming it, nothing charged.
		r = s.imageOp(t, key, "/api/v1/images/lifestyle-scenes?prompt=on+a+beach", encodePNG(t, cutOut(20, 20)), "image/png")
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != 422 || r.json(t)["error"].(map[string]any)["details"].(map[string]any)["field"] != "prompt" {
			t.Fatalf("prompt without provider: %d %s", r.status, r.body)
		}
	})

	t.Run("provider", func(t *testing.T) {
		const apiKey = "sk_pr_test_0123456789"
		var calls atomic.Int32
		var mu sync.Mutex
		var prompts []string
		fail := atomic.Bool{}
		scene := encodePNG(t, texture(640, 480))
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			if r.Method != http.MethodPost || r.URL.Path != "/v2/edit" || r.Header.Get("x-api-key") != apiKey {
				http.Error(w, `{"detail":"bad request"}`, http.StatusUnauthorized)
				return
			}
			mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "multipart/form-data" {
				http.Error(w, `{"detail":"want multipart"}`, http.StatusBadRequest)
				return
			}
			mr := multipart.NewReader(r.Body, params["boundary"])
			fields := map[string]string{}
			var file []byte
			for {
				p, err := mr.NextPart()
				if err == io.EOF {
					break
				}
				if err != nil {
					http.Error(w, `{"detail":"bad multipart"}`, http.StatusBadRequest)
					return
				}
				b, _ := io.ReadAll(p)
				if p.FormName() == "imageFile" {
					file = b
				} else {
					fields[p.FormName()] = string(b)
				}
			}
			if _, _, err := image.Decode(bytes.NewReader(file)); err != nil || fields["background.prompt"] == "" {
				http.Error(w, `{"detail":"missing imageFile or prompt"}`, http.StatusBadRequest)
				return
			}
			mu.Lock()
			prompts = append(prompts, fields["background.prompt"])
			mu.Unlock()
			if fail.Load() {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusPaymentRequired)
				fmt.Fprint(w, `{"detail":"Insufficient credits","status_code":402,"type":"insufficient_credits"}`)
				return
			}
			w.Header().Set("Content-Type", "image/png")
			w.Write(scene)
		}))
		defer api.Close()
		dir := t.TempDir()
		s := startServerWith(t, dir, func(c *Config) {
			c.SceneAPIURL, c.SceneAPIKey, c.OutboundAllowPrivate = api.URL, apiKey, true
		})
		v := openapitest.NewValidator(t)
		tn := newTenant(t, dir, "scenes.example.com", "growth", "customers:read")
		key := cli(t, dir, "image-keys", "mint", "--shop", tn.shopID, "--scopes", "images:write,usage:read")["token"].(string)

		r := s.imageOp(t, key, "/api/v1/images/lifestyle-scenes?prompt=on+a+sunny+beach", encodePNG(t, discPhoto(64, 64)), "image/png")
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != http.StatusAccepted || r.header.Get("X-Credits-Charged") != "3" || r.header.Get("X-Credits-Remaining") != "97" {
			t.Fatalf("provider scene: %d %v %s", r.status, r.header, r.body)
		}
		attrs := s.waitOperation(t, v, key, opID(t, r))
		if attrs["status"] != "succeeded" || attrs["engine"] != "photoroom-v2-edit" {
			t.Fatalf("provider scene: %v", attrs)
		}
		img, _, _ := s.result(t, key, opID(t, r))
		if b := img.Bounds(); b.Dx() != 640 || b.Dy() != 480 {
			t.Fatalf("provider scene size %v", b)
		}
		mu.Lock()
		if len(prompts) != 1 || prompts[0] != "on a sunny beach" {
			t.Fatalf("prompts sent %q", prompts)
		}
		mu.Unlock()

		// The provider's account is out of credits: the operation fails
		// and the shop's credits come back.
		fail.Store(true)
		r = s.imageOp(t, key, "/api/v1/images/lifestyle-scenes?scene=wood-surface", encodePNG(t, discPhoto(64, 64)), "image/png")
		if r.status != http.StatusAccepted {
			t.Fatalf("second scene: %d %s", r.status, r.body)
		}
		attrs = s.waitOperation(t, v, key, opID(t, r))
		errInfo, _ := attrs["error"].(map[string]any)
		if attrs["status"] != "failed" || attrs["credits_charged"] != 0.0 || errInfo["code"] != "provider_error" {
			t.Fatalf("failed scene: %v", attrs)
		}
		mu.Lock()
		if prompts[len(prompts)-1] != "on a warm oak wooden table top in soft daylight" {
			t.Fatalf("preset prompt %q", prompts[len(prompts)-1])
		}
		mu.Unlock()
		eventually(t, minEventually, "the failed operation's credits released", func() bool {
			ai, ops := usageCredits(t, s, key)
			return ai["used"] == 3.0 && ai["reserved"] == 0.0 && ai["remaining"] == 97.0 && ops["lifestyle_scenes"] == 1.0
		})
	})
}

// TestImageCreditsAndAccess: 50 concurrent requests against 10 credits get
// exactly 10 accepted and 402 for the rest; a starter shop is 402 at once;
// a 26 MB body is 413 and charges nothing; images:read reads but cannot
// run; a key with no scopes is 403 naming the scope; another shop's
// operation is 404.
func TestImageCreditsAndAccess(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	tn := newTenant(t, dir, "credits-img.example.com", "agency", "customers:read")
	cli(t, dir, "shops", "credits", "--shop", tn.shopID, "--monthly", "10")
	key := cli(t, dir, "image-keys", "mint", "--shop", tn.shopID, "--scopes", "images:write,usage:read")["token"].(string)

	// 26 MB: refused at the door, nothing charged.
	big := make([]byte, 26_000_000)
	copy(big, encodePNG(t, texture(8, 8)))
	r := s.imageOp(t, key, "/api/v1/images/upscales", big, "image/png")
	v.ValidateResponse(t, r.req, r.resp, r.body)
	if r.status != http.StatusRequestEntityTooLarge || r.errorCode(t) != "payload_too_large" {
		t.Fatalf("26 MB: %d %s", r.status, r.body)
	}

	body := encodePNG(t, texture(16, 16))
	const n = 50
	statuses := make([]int, n)
	remaining := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, s.base+"/api/v1/images/upscales?scale=2", bytes.NewReader(body))
			req.Header.Set("X-API-Key", key)
			req.Header.Set("Content-Type", "image/png")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i], remaining[i] = resp.StatusCode, resp.Header.Get("X-Credits-Remaining")
		}()
	}
	wg.Wait()
	accepted, refused := 0, 0
	for i, st := range statuses {
		switch st {
		case http.StatusAccepted:
			accepted++
		case http.StatusPaymentRequired:
			refused++
			if remaining[i] != "0" {
				t.Errorf("402 with X-Credits-Remaining %q", remaining[i])
			}
		default:
			t.Errorf("concurrent request answered %d", st)
		}
	}
	if accepted != 10 || refused != 40 {
		t.Fatalf("%d accepted, %d refused; want 10 and 40", accepted, refused)
	}
	r = s.imageOp(t, key, "/api/v1/images/upscales", body, "image/png")
	v.ValidateResponse(t, r.req, r.resp, r.body)
	if r.status != http.StatusPaymentRequired || r.errorCode(t) != "credits_exhausted" {
		t.Fatalf("beyond the budget: %d %s", r.status, r.body)
	}
	det := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
	if det["remaining"] != 0.0 || det["resets_at"] == "" {
		t.Fatalf("details %v", det)
	}
	eventually(t, 2*minEventually, "ten operations done, ten credits used", func() bool {
		ai, ops := usageCredits(t, s, key)
		return ai["used"] == 10.0 && ai["reserved"] == 0.0 && ops["upscales"] == 10.0
	})

	// A starter shop has no credits: 402 at once.
	starter := newTenant(t, dir, "starter-img.example.com", "starter", "customers:read")
	skey := cli(t, dir, "image-keys", "mint", "--shop", starter.shopID, "--scopes", "images:write")["token"].(string)
	r = s.imageOp(t, skey, "/api/v1/images/upscales", body, "image/png")
	if r.status != http.StatusPaymentRequired || r.header.Get("X-Credits-Charged") != "0" || r.header.Get("X-Credits-Remaining") != "0" {
		t.Fatalf("starter: %d %v %s", r.status, r.header, r.body)
	}

	// Scopes.
	list := s.get(t, "/api/v1/images?filter[status]=succeeded", "", "X-API-Key", key)
	v.ValidateResponse(t, list.req, list.resp, list.body)
	items := list.json(t)["data"].([]any)
	if list.status != 200 || len(items) != 10 {
		t.Fatalf("list: %d, %d items", list.status, len(items))
	}
	// Each operation ran once: a worker keeps an operation until the
	// queue shows its outcome, so none is taken up a second time.
	// The log counts the attempts (the read model stops counting at the
	// outcome).
	core, err := OpenCore(context.Background(), testConfig(dir), newLogger(&Config{LogLevel: "error"}, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		id := it.(map[string]any)["id"].(string)
		if n, err := core.Commands.ImageAttempts(context.Background(), id); err != nil || n != 1 {
			t.Errorf("operation %s ran %d times (%v)", id, n, err)
		}
	}
	core.Close()
	if strings.Contains(s.logs.String(), "recording the attempt failed") {
		t.Errorf("an outcome could not be recorded:\n%s", s.logs.String())
	}
	id := items[0].(map[string]any)["id"].(string)
	reader := cli(t, dir, "image-keys", "mint", "--shop", tn.shopID)["token"].(string) // usage:read, images:read
	if g := s.get(t, "/api/v1/images/"+id, "", "X-API-Key", reader); g.status != 200 {
		t.Fatalf("images:read get: %d %s", g.status, g.body)
	}
	r = s.imageOp(t, reader, "/api/v1/images/upscales", body, "image/png")
	v.ValidateResponse(t, r.req, r.resp, r.body)
	if r.status != 403 || r.json(t)["error"].(map[string]any)["details"].(map[string]any)["required_scope"] != "images:write" {
		t.Fatalf("images:read runs: %d %s", r.status, r.body)
	}
	inert := cli(t, dir, "image-keys", "mint", "--shop", tn.shopID, "--scopes", "")["token"].(string)
	g := s.get(t, "/api/v1/images/"+id, "", "X-API-Key", inert)
	if g.status != 403 || g.json(t)["error"].(map[string]any)["details"].(map[string]any)["required_scope"] != "images:read" {
		t.Fatalf("[] scopes: %d %s", g.status, g.body)
	}
	other := newTenant(t, dir, "other-img.example.com", "agency", "customers:read")
	okey := cli(t, dir, "image-keys", "mint", "--shop", other.shopID)["token"].(string)
	for _, p := range []string{"/api/v1/images/" + id, "/api/v1/images/" + id + "/result"} {
		g := s.get(t, p, "", "X-API-Key", okey)
		v.ValidateResponse(t, g.req, g.resp, g.body)
		if g.status != 404 {
			t.Fatalf("another shop's %s: %d %s", p, g.status, g.body)
		}
	}
	// An admin token is not an image-API key.
	if g := s.get(t, "/api/v1/images", tn.token); g.status != 401 {
		t.Fatalf("bearer token on the image API: %d %s", g.status, g.body)
	}
}

// TestImageOperationsSurviveARestart: the work left by a stopped server is
// the operations the log shows unfinished. A request recorded while no
// server ran is run at the next start; an operation whose attempts all
// ended without an outcome (a picture that killed the process three times)
// fails attempts_exhausted and its credits come back.
func TestImageOperationsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	tn := newTenant(t, dir, "restart-img.example.com", "growth", "customers:read")
	key := cli(t, dir, "image-keys", "mint", "--shop", tn.shopID, "--scopes", "images:write,usage:read")["token"].(string)
	s.stop()

	ctx := context.Background()
	core, err := OpenCore(ctx, testConfig(dir), newLogger(&Config{LogLevel: "error"}, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := localfs.New(localfs.Config{Root: filepath.Join(dir, app.ImagesDir)})
	if err != nil {
		t.Fatal(err)
	}
	pic := encodePNG(t, texture(50, 40))
	request := func(id string) {
		t.Helper()
		digest, size, err := st.Put(ctx, tn.shopID, runner.InputKey(id), bytes.NewReader(pic))
		if err != nil {
			t.Fatal(err)
		}
		req := domain.ImageOperationRequested{ShopID: tn.shopID, OperationID: id, Kind: domain.CreditKindUpscale,
			Options: map[string]string{"scale": "2"}, Credits: 1, Input: domain.ImageRef{Digest: digest, Size: size, Format: "png", Width: 50, Height: 40}}
		if _, _, err := core.Commands.RequestImageOperation(ctx, commands.RequestImageOperation{Request: req}, testMeta()); err != nil {
			t.Fatal(err)
		}
	}
	left, crashed := domain.NewID(domain.PrefixImageOperation), domain.NewID(domain.PrefixImageOperation)
	request(left)
	request(crashed)
	for range runner.MaxAttempts {
		if _, _, err := core.Commands.StartImageOperation(ctx, commands.StartImageOperation{ShopID: tn.shopID, OperationID: crashed,
			Engine: "upscale"}, testMeta()); err != nil {
			t.Fatal(err)
		}
	}
	if err := core.Close(); err != nil {
		t.Fatal(err)
	}

	s = startServer(t, dir)
	v := openapitest.NewValidator(t)
	if a := s.waitOperation(t, v, key, left); a["status"] != "succeeded" || a["attempts"] != 1.0 {
		t.Fatalf("the operation left queued: %v", a)
	}
	a := s.waitOperation(t, v, key, crashed)
	if e, _ := a["error"].(map[string]any); a["status"] != "failed" || e["code"] != "attempts_exhausted" || a["credits_charged"] != 0.0 {
		t.Fatalf("the operation that never ended: %v", a)
	}
	eventually(t, minEventually, "one credit used, the other released", func() bool {
		ai, _ := usageCredits(t, s, key)
		return ai["used"] == 1.0 && ai["reserved"] == 0.0 && ai["remaining"] == 99.0
	})
	// The finished operations' inputs are gone; the result stays.
	if _, err := st.Get(ctx, tn.shopID, runner.InputKey(left)); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("input of a finished operation: %v", err)
	}
	if rc, err := st.Get(ctx, tn.shopID, runner.ResultKey(left)); err != nil {
		t.Fatalf("result: %v", err)
	} else {
		rc.Close()
	}
}
