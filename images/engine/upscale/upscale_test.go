package upscale_test

import (
	"context"
	"errors"
	"image"
	"image/color"
	"math"
	"testing"
	"time"

	"golang.org/x/image/draw"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/images/engine"
	"github.com/cgp-platform/cgp/images/engine/upscale"
)

// photo draws a deterministic photo-like image: smooth gradients, a
// disc and a rectangle with hard edges, and a fine texture.
func photo(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	seed := uint32(12345)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			r := 60 + 120*fx + 30*math.Sin(fy*6)
			g := 80 + 100*fy
			b := 140 + 60*math.Cos(fx*4+fy*3)
			dx, dy := fx-0.4, fy-0.45
			if dx*dx+dy*dy < 0.05 {
				r, g, b = 220, 190-60*fy, 40
			}
			if fx > 0.65 && fx < 0.9 && fy > 0.2 && fy < 0.7 {
				r, g, b = 30, 40+40*fx, 60
			}
			// Texture: a low-amplitude periodic pattern plus a little noise.
			seed = seed*1664525 + 1013904223
			t := 10*math.Sin(float64(x)*0.9)*math.Sin(float64(y)*0.7) + float64(seed>>28) - 7.5
			img.SetNRGBA(x, y, color.NRGBA{c(r + t), c(g + t), c(b + t), 255})
		}
	}
	return img
}

func c(v float64) uint8 { return uint8(math.Max(0, math.Min(255, math.Round(v)))) }

// psnr compares the colour channels of two images of the same size.
func psnr(t *testing.T, a, b image.Image) float64 {
	t.Helper()
	if a.Bounds().Size() != b.Bounds().Size() {
		t.Fatalf("sizes differ: %v and %v", a.Bounds(), b.Bounds())
	}
	var sum float64
	n := 0
	ab, bb := a.Bounds(), b.Bounds()
	for y := 0; y < ab.Dy(); y++ {
		for x := 0; x < ab.Dx(); x++ {
			r1, g1, b1, _ := a.At(ab.Min.X+x, ab.Min.Y+y).RGBA()
			r2, g2, b2, _ := b.At(bb.Min.X+x, bb.Min.Y+y).RGBA()
			for _, d := range []float64{float64(r1>>8) - float64(r2>>8), float64(g1>>8) - float64(g2>>8), float64(b1>>8) - float64(b2>>8)} {
				sum += d * d
				n++
			}
		}
	}
	mse := sum / float64(n)
	return 10 * math.Log10(255*255/mse)
}

func run(t *testing.T, img image.Image, scale string) engine.Output {
	t.Helper()
	out, err := upscale.New(upscale.Config{}).Run(context.Background(), engine.Input{Image: img, Options: map[string]string{"scale": scale}})
	if err != nil {
		t.Fatalf("Run(scale=%s): %v", scale, err)
	}
	return out
}

func TestUpscaleDimensions(t *testing.T) {
	src := photo(97, 61).SubImage(image.Rect(3, 5, 80, 60)) // odd size, non-zero origin
	for _, tc := range []struct {
		scale string
		w, h  int
	}{{"2", 154, 110}, {"4", 308, 220}, {"", 154, 110}} {
		out := run(t, src, tc.scale)
		if got := out.Image.Bounds(); got != image.Rect(0, 0, tc.w, tc.h) {
			t.Errorf("scale %q: bounds %v, want %dx%d", tc.scale, got, tc.w, tc.h)
		}
		if _, ok := out.Image.(*image.RGBA); !ok {
			t.Errorf("scale %q: result is %T, want *image.RGBA", tc.scale, out.Image)
		}
		if out.Metadata["method"] != "catmull-rom+unsharp" {
			t.Errorf("scale %q: metadata %v, want method catmull-rom+unsharp", tc.scale, out.Metadata)
		}
	}
}

func TestUpscaleBeatsNearestNeighbour(t *testing.T) {
	orig := photo(512, 384)
	for _, scale := range []int{2, 4} {
		small := image.NewRGBA(image.Rect(0, 0, 512/scale, 384/scale))
		draw.BiLinear.Scale(small, small.Bounds(), orig, orig.Bounds(), draw.Src, nil)

		up := run(t, small, map[int]string{2: "2", 4: "4"}[scale]).Image
		nn := image.NewRGBA(orig.Bounds())
		draw.NearestNeighbor.Scale(nn, nn.Bounds(), small, small.Bounds(), draw.Src, nil)

		pe, pn := psnr(t, orig, up), psnr(t, orig, nn)
		t.Logf("×%d: engine %.2f dB, nearest-neighbour %.2f dB", scale, pe, pn)
		if pe <= pn {
			t.Errorf("×%d: engine PSNR %.2f dB is not above nearest-neighbour's %.2f dB", scale, pe, pn)
		}
	}
}

func TestUpscaleKeepsFlatColourAndAlpha(t *testing.T) {
	src := image.NewNRGBA(image.Rect(0, 0, 16, 16))
	draw.Draw(src, image.Rect(0, 0, 16, 16), image.NewUniform(color.NRGBA{200, 100, 50, 255}), image.Point{}, draw.Src)
	draw.Draw(src, image.Rect(0, 0, 16, 4), image.Transparent, image.Point{}, draw.Src)
	out := run(t, src, "2").Image.(*image.RGBA)
	if got := out.RGBAAt(16, 20); got != (color.RGBA{200, 100, 50, 255}) {
		t.Errorf("flat interior became %v", got)
	}
	if got := out.RGBAAt(16, 1); got.A != 0 {
		t.Errorf("transparent area became %v", got)
	}
	for i := 0; i < len(out.Pix); i += 4 {
		if a := out.Pix[i+3]; out.Pix[i] > a || out.Pix[i+1] > a || out.Pix[i+2] > a {
			t.Fatalf("pixel %d is not valid premultiplied colour: %v", i/4, out.Pix[i:i+4])
		}
	}
}

func TestUpscaleRefusesBadOptions(t *testing.T) {
	e := upscale.New(upscale.Config{MaxOutputPixels: 1000})
	for _, tc := range []struct {
		name  string
		img   image.Image
		scale string
		field string
	}{
		{"scale 3", photo(8, 8), "3", "scale"},
		{"scale x2", photo(8, 8), "x2", "scale"},
		{"scale 1", photo(8, 8), "1", "scale"},
		{"too large", photo(20, 20), "4", "scale"},
		{"empty", image.NewRGBA(image.Rect(0, 0, 0, 0)), "2", "image"},
		{"nil", nil, "2", "image"},
	} {
		_, err := e.Run(context.Background(), engine.Input{Image: tc.img, Options: map[string]string{"scale": tc.scale}})
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.CodeInvalid || de.Field != tc.field {
			t.Errorf("%s: error %v, want a validation failure on %q", tc.name, err, tc.field)
		}
	}
}

func TestUpscaleHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := upscale.New(upscale.Config{}).Run(ctx, engine.Input{Image: photo(64, 64), Options: map[string]string{"scale": "4"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	_, err = upscale.New(upscale.Config{}).Run(ctx, engine.Input{Image: photo(64, 64), Options: map[string]string{"scale": "2"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want context.DeadlineExceeded", err)
	}
}

func BenchmarkUpscale1MP(b *testing.B) {
	src := photo(1000, 1000)
	e := upscale.New(upscale.Config{})
	for _, scale := range []string{"2", "4"} {
		b.Run("x"+scale, func(b *testing.B) {
			b.ReportAllocs()
			in := engine.Input{Image: src, Options: map[string]string{"scale": scale}}
			for i := 0; i < b.N; i++ {
				if _, err := e.Run(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// countdown is a context that becomes cancelled after its Err has been
// asked n times: it shows the engine checks between bands, not only once
// at the start, without depending on timing.
type countdown struct {
	context.Context
	n int
}

func (c *countdown) Err() error {
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

func TestUpscaleStopsBetweenBands(t *testing.T) {
	for _, n := range []int{1, 3, 20, 35} {
		ctx := &countdown{Context: context.Background(), n: n}
		_, err := upscale.New(upscale.Config{}).Run(ctx, engine.Input{Image: photo(200, 200), Options: map[string]string{"scale": "4"}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled after %d checks: error %v, want context.Canceled", n, err)
		}
	}
}
