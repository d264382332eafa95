package studio_test

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"testing"
	"time"

	"golang.org/x/image/draw"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/images/engine"
	"github.com/cgp-platform/cgp/images/engine/studio"
)

var red = color.NRGBA{220, 30, 40, 255}

// cutout is a background removal's kind of result: a red bottle-like shape
// (a disc on a rectangle) on transparency.
func cutout() *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, 300, 400))
	draw.Draw(img, image.Rect(100, 150, 200, 380), image.NewUniform(red), image.Point{}, draw.Src)
	for y := 40; y < 180; y++ {
		for x := 80; x < 220; x++ {
			if dx, dy := x-150, y-110; dx*dx+dy*dy < 70*70 {
				img.SetNRGBA(x, y, red)
			}
		}
	}
	return img
}

func run(t *testing.T, img image.Image, opts map[string]string) (*image.RGBA, image.Rectangle, map[string]string) {
	t.Helper()
	out, err := studio.New().Run(context.Background(), engine.Input{Image: img, Options: opts})
	if err != nil {
		t.Fatalf("Run(%v): %v", opts, err)
	}
	rgba, ok := out.Image.(*image.RGBA)
	if !ok {
		t.Fatalf("result is %T, want *image.RGBA", out.Image)
	}
	var p image.Rectangle
	if _, err := fmt.Sscanf(out.Metadata["placement"], "%d,%d,%d,%d", &p.Min.X, &p.Min.Y, &p.Max.X, &p.Max.Y); err != nil {
		t.Fatalf("metadata placement %q: %v", out.Metadata["placement"], err)
	}
	return rgba, p, out.Metadata
}

func background(t *testing.T, scene string) *image.RGBA {
	t.Helper()
	bg, err := studio.Background(context.Background(), scene, studio.Size, studio.Size)
	if err != nil {
		t.Fatal(err)
	}
	return bg
}

func near(a, b color.RGBA, tol int) bool {
	d := func(x, y uint8) bool { return int(x)-int(y) <= tol && int(y)-int(x) <= tol }
	return d(a.R, b.R) && d(a.G, b.G) && d(a.B, b.B) && d(a.A, b.A)
}

func TestEveryScene(t *testing.T) {
	for _, scene := range studio.Scenes() {
		t.Run(scene, func(t *testing.T) {
			img, p, md := run(t, cutout(), map[string]string{"scene": scene})
			if img.Bounds() != image.Rect(0, 0, 1024, 1024) {
				t.Errorf("bounds %v, want 1024×1024", img.Bounds())
			}
			if md["engine"] != "embedded-studio" || md["scene"] != scene {
				t.Errorf("metadata %v", md)
			}
			if !p.In(img.Bounds()) || p.Dx() < 200 || p.Dy() < 300 {
				t.Errorf("placement %v is off the canvas or too small", p)
			}
			// The object is kept: the middle of its body is its own red.
			body := img.RGBAAt(p.Min.X+p.Dx()/2, p.Min.Y+p.Dy()*3/4)
			if !near(body, color.RGBA{220, 30, 40, 255}, 3) {
				t.Errorf("object pixel %v, want the object's red", body)
			}
			// The corners are the scene's, opaque.
			bg := background(t, scene)
			for _, c := range []image.Point{{0, 0}, {1023, 0}, {0, 1023}, {1023, 1023}} {
				if got, want := img.RGBAAt(c.X, c.Y), bg.RGBAAt(c.X, c.Y); got != want || got.A != 255 {
					t.Errorf("corner %v is %v, want the scene's %v", c, got, want)
				}
			}
			// Scenes differ from one another (each is drawn, not a blank).
			if scene != "studio-white" && bg.RGBAAt(512, 1000) == background(t, "studio-white").RGBAAt(512, 1000) {
				t.Errorf("the floor of %s is the same as studio-white's", scene)
			}
		})
	}
}

func TestShadowDarkensUnderTheObject(t *testing.T) {
	for _, scene := range studio.Scenes() {
		img, p, _ := run(t, cutout(), map[string]string{"scene": scene, "reflection": "off"})
		bg := background(t, scene)
		// A band just under the object's base, across its middle.
		area := image.Rect(p.Min.X+p.Dx()/3, p.Max.Y+2, p.Max.X-p.Dx()/3, p.Max.Y+12)
		lum := func(im *image.RGBA) (sum int) {
			for y := area.Min.Y; y < area.Max.Y; y++ {
				for x := area.Min.X; x < area.Max.X; x++ {
					c := im.RGBAAt(x, y)
					sum += int(c.R) + int(c.G) + int(c.B)
				}
			}
			return sum
		}
		with, without := lum(img), lum(bg)
		if float64(with) > 0.9*float64(without) {
			t.Errorf("%s: the area under the object sums to %d, the empty scene's to %d: no shadow", scene, with, without)
		}
	}
}

func TestReflectionShowsTheObjectUnderItsBase(t *testing.T) {
	on, p, md := run(t, cutout(), map[string]string{"scene": "studio-white"})
	if md["reflection"] != "on" {
		t.Fatalf("studio-white's reflection is %q, want on by default", md["reflection"])
	}
	off, _, _ := run(t, cutout(), map[string]string{"scene": "studio-white", "reflection": "off"})
	x, y := p.Min.X+p.Dx()/2, p.Max.Y+3
	a, b := on.RGBAAt(x, y), off.RGBAAt(x, y)
	if int(a.R)-int(a.G) <= int(b.R)-int(b.G) {
		t.Errorf("under the base, with reflection %v, without %v: no red tint", a, b)
	}
}

func TestOpaqueInputIsTheWholeObject(t *testing.T) {
	in := image.NewNRGBA(image.Rect(0, 0, 200, 100))
	draw.Draw(in, in.Bounds(), image.NewUniform(color.NRGBA{20, 90, 200, 255}), image.Point{}, draw.Src)
	img, p, _ := run(t, in, map[string]string{"scene": "wood-surface"})
	if got := float64(p.Dx()) / float64(p.Dy()); got < 1.95 || got > 2.05 {
		t.Errorf("placement %v has aspect %.2f, want the input's 2", p, got)
	}
	if got := img.RGBAAt(p.Min.X+p.Dx()/2, p.Min.Y+p.Dy()/2); !near(got, color.RGBA{20, 90, 200, 255}, 3) {
		t.Errorf("object pixel %v, want the input's blue", got)
	}
	bg := background(t, "wood-surface")
	if got := img.RGBAAt(0, 0); got != bg.RGBAAt(0, 0) {
		t.Errorf("corner %v is not the scene's %v", got, bg.RGBAAt(0, 0))
	}
}

func TestDefaultSceneAndBadOptions(t *testing.T) {
	_, _, md := run(t, cutout(), nil)
	if md["scene"] != studio.DefaultScene {
		t.Errorf("default scene %q, want %q", md["scene"], studio.DefaultScene)
	}
	clear := image.NewNRGBA(image.Rect(0, 0, 10, 10))
	for _, tc := range []struct {
		name  string
		img   image.Image
		opts  map[string]string
		field string
	}{
		{"unknown scene", cutout(), map[string]string{"scene": "beach-sunset"}, "scene"},
		{"bad reflection", cutout(), map[string]string{"reflection": "yes"}, "reflection"},
		{"transparent", clear, nil, "image"},
		{"empty", image.NewNRGBA(image.Rectangle{}), nil, "image"},
		{"nil", nil, nil, "image"},
	} {
		_, err := studio.New().Run(context.Background(), engine.Input{Image: tc.img, Options: tc.opts})
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.CodeInvalid || de.Field != tc.field {
			t.Errorf("%s: error %v, want a validation failure on %q", tc.name, err, tc.field)
		}
	}
	if _, err := studio.Background(context.Background(), "nope", 8, 8); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("Background of an unknown scene: %v", err)
	}
}

func TestContextIsHonoured(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := studio.New().Run(ctx, engine.Input{Image: cutout()}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run: error %v, want context.Canceled", err)
	}
	dctx, dcancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer dcancel()
	if _, err := studio.Background(dctx, "marble-surface", 64, 64); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Background: error %v, want context.DeadlineExceeded", err)
	}
}

func BenchmarkComposite(b *testing.B) {
	in := engine.Input{Image: cutout(), Options: map[string]string{"scene": "marble-surface"}}
	e := studio.New()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := e.Run(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// countdown is a context that becomes cancelled after its Err has been
// asked n times: it shows the compositor checks between bands of work,
// not only once at the start, without depending on timing.
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

func TestCompositorStopsBetweenBands(t *testing.T) {
	for _, n := range []int{1, 5, 33, 36} {
		ctx := &countdown{Context: context.Background(), n: n}
		if _, err := studio.New().Run(ctx, engine.Input{Image: cutout()}); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled after %d checks: error %v, want context.Canceled", n, err)
		}
	}
}
