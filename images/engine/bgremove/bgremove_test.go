package bgremove_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/images/engine/bgremove"
)

// artefacts returns the configuration of the real model: the paths in
// CGP_ONNXRUNTIME_LIB and CGP_BGREMOVE_MODEL, or else the files that
// `make models` puts in .cache/models at the repository's root. Missing
// artefacts fail the test: `make test` fetches them first.
func artefacts(t testing.TB) bgremove.Config {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	cfg := bgremove.Config{
		LibraryPath: filepath.Join(dir, ".cache", "models", bgremove.LibraryFile),
		ModelPath:   filepath.Join(dir, ".cache", "models", bgremove.ModelFile),
	}
	if p := os.Getenv("CGP_ONNXRUNTIME_LIB"); p != "" {
		cfg.LibraryPath = p
	}
	if p := os.Getenv("CGP_BGREMOVE_MODEL"); p != "" {
		cfg.ModelPath = p
	}
	for _, p := range []string{cfg.LibraryPath, cfg.ModelPath} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("background-removal artefact missing: %v; run `make models` (make test does it first)", err)
		}
	}
	return cfg
}

var (
	shared     *bgremove.Engine
	sharedErr  error
	sharedOnce sync.Once
)

// engine opens one engine for the whole test binary: a session takes a
// couple of seconds to open and about 1.9 GB to run.
func engine(t testing.TB) *bgremove.Engine {
	t.Helper()
	cfg := artefacts(t)
	sharedOnce.Do(func() { shared, sharedErr = bgremove.New(cfg) })
	if sharedErr != nil {
		t.Fatalf("new engine: %v", sharedErr)
	}
	return shared
}

// redDisc draws a red disc on a plain light-grey background.
func redDisc(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	cx, cy := w/2, h/2
	r := min(w, h) * 3 / 10
	for y := range h {
		for x := range w {
			c := color.RGBA{236, 236, 236, 255}
			if dx, dy := x-cx, y-cy; dx*dx+dy*dy <= r*r {
				c = color.RGBA{210, 30, 35, 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img
}

func TestRemoveBackgroundOfARedDisc(t *testing.T) {
	e := engine(t)
	const w, h = 800, 600
	out, err := e.Run(context.Background(), redDisc(w, h))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		t.Fatalf("encode png: %v", err)
	}
	if os.Getenv("CGP_BGREMOVE_KEEP") != "" {
		_ = os.WriteFile(os.Getenv("CGP_BGREMOVE_KEEP"), buf.Bytes(), 0o600)
	}
	dec, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("decode png: %v", err)
	}
	if got := dec.Bounds(); got != image.Rect(0, 0, w, h) {
		t.Fatalf("result bounds %v, want %dx%d", got, w, h)
	}
	alpha := func(x, y int) uint8 { return color.NRGBAModel.Convert(dec.At(x, y)).(color.NRGBA).A }
	for _, p := range []image.Point{{2, 2}, {w - 3, 2}, {2, h - 3}, {w - 3, h - 3}} {
		if a := alpha(p.X, p.Y); a >= 32 {
			t.Errorf("corner %v alpha %d, want < 32 (background kept)", p, a)
		}
	}
	if a := alpha(w/2, h/2); a <= 224 {
		t.Errorf("centre alpha %d, want > 224 (object removed)", a)
	}
	c := color.NRGBAModel.Convert(dec.At(w/2, h/2)).(color.NRGBA)
	if c.R != 210 || c.G != 30 || c.B != 35 {
		t.Errorf("centre colour %v, want the picture's red kept", c)
	}
}

func TestRunWithACancelledContextStops(t *testing.T) {
	e := engine(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Run(ctx, redDisc(64, 64)); !errors.Is(err, context.Canceled) {
		t.Fatalf("run with a cancelled context: %v, want context.Canceled", err)
	}
	// The session is given back: the next run works.
	if _, err := e.Run(context.Background(), redDisc(64, 48)); err != nil {
		t.Fatalf("run after a cancelled one: %v", err)
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	err := bgremove.Config{LibraryPath: "/nonexistent/lib.so", Workers: 3, Threads: -1}.Validate()
	if err == nil {
		t.Fatal("validate: nil, want errors")
	}
	for _, want := range []string{"library /nonexistent/lib.so", "model path is empty", "workers 3", "threads -1", "make models"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("validate error %q does not mention %q", err, want)
		}
	}
	if _, err := bgremove.New(bgremove.Config{}); err == nil {
		t.Fatal("new with an empty config: nil error")
	}
}

// BenchmarkRemoveBackground1024 measures one 1024×1024 picture through the
// whole engine (resize, normalise, inference, mask), one session.
func BenchmarkRemoveBackground1024(b *testing.B) {
	e := engine(b)
	img := redDisc(1024, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Run(context.Background(), img); err != nil {
			b.Fatal(err)
		}
	}
}
