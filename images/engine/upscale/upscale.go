package upscale

import (
	"context"
	"image"
	"strconv"

	"golang.org/x/image/draw"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/images/engine"
)

// Method is the honest name of the algorithm, recorded in every result's
// metadata under "method".
const Method = "catmull-rom+unsharp"

// DefaultMaxOutputPixels bounds a result to 100 megapixels (400 MB as
// RGBA): a 25-megapixel image ×2, or a 6.25-megapixel image ×4.
const DefaultMaxOutputPixels = 100_000_000

// Unsharp-mask parameters: a 3×3 binomial blur (radius 1 px), half the
// difference added back, differences of 2/255 or less left alone so that
// flat areas and noise are not amplified.
const (
	unsharpAmount    = 0.5
	unsharpThreshold = 2
)

// bandRows is how many output rows are computed between two checks of
// the context.
const bandRows = 32

// Config configures the engine. The zero value is usable.
type Config struct {
	// MaxOutputPixels is the largest result, in pixels, the engine will
	// produce; 0 means DefaultMaxOutputPixels.
	MaxOutputPixels int64
}

// Engine upscales an image by 2 or 4. It holds no mutable state.
type Engine struct {
	maxOut int64
}

var _ engine.Engine = (*Engine)(nil)

// New returns an upscaling engine.
func New(cfg Config) *Engine {
	if cfg.MaxOutputPixels <= 0 {
		cfg.MaxOutputPixels = DefaultMaxOutputPixels
	}
	return &Engine{maxOut: cfg.MaxOutputPixels}
}

// Name returns "upscale".
func (e *Engine) Name() string { return "upscale" }

// Run upscales in.Image by the option "scale" ("2" or "4"; missing means
// 2). The result is an *image.RGBA exactly scale times wider and higher.
// A scale other than 2 or 4, or a result larger than MaxOutputPixels, is
// a 422 naming "scale"; an empty image is a 422 naming "image".
func (e *Engine) Run(ctx context.Context, in engine.Input) (engine.Output, error) {
	scale, err := parseScale(in.Options["scale"])
	if err != nil {
		return engine.Output{}, err
	}
	if in.Image == nil || in.Image.Bounds().Empty() {
		return engine.Output{}, domain.Invalid("image", "has no pixels")
	}
	b := in.Image.Bounds()
	w, h := b.Dx(), b.Dy()
	if out := int64(w) * int64(h) * int64(scale) * int64(scale); out > e.maxOut {
		return engine.Output{}, domain.Invalid("scale",
			"×%d of a %d×%d image would be %d pixels, more than the limit of %d", scale, w, h, out, e.maxOut)
	}
	if err := ctx.Err(); err != nil {
		return engine.Output{}, err
	}
	src := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(src, src.Bounds(), in.Image, b.Min, draw.Src)

	dst := image.NewRGBA(image.Rect(0, 0, w*scale, h*scale))
	if err := resample(ctx, dst, src, scale); err != nil {
		return engine.Output{}, err
	}
	if err := unsharp(ctx, dst); err != nil {
		return engine.Output{}, err
	}
	return engine.Output{Image: dst, Metadata: map[string]string{
		"engine": "upscale",
		"method": Method,
		"scale":  strconv.Itoa(scale),
		"width":  strconv.Itoa(w * scale),
		"height": strconv.Itoa(h * scale),
	}}, nil
}

func parseScale(s string) (int, error) {
	switch s {
	case "", "2":
		return 2, nil
	case "4":
		return 4, nil
	}
	return 0, domain.Invalid("scale", "must be 2 or 4")
}

// taps holds, for each of the scale phases of an output pixel within its
// source pixel, the source offset of the first of four taps and their
// Catmull-Rom weights. For an integer scale the weights repeat with that
// period, so they are computed once.
type taps struct {
	base   []int
	weight [][4]float32
}

func newTaps(scale int) taps {
	t := taps{base: make([]int, scale), weight: make([][4]float32, scale)}
	for p := 0; p < scale; p++ {
		// The centre of output pixel p lands at this source coordinate
		// (pixel centres at .5), relative to the source pixel's index.
		x := (float64(p)+0.5)/float64(scale) - 0.5
		i := floor(x)
		f := x - float64(i)
		t.base[p] = i - 1
		t.weight[p] = catmullRom(f)
	}
	return t
}

func floor(x float64) int {
	i := int(x)
	if float64(i) > x {
		i--
	}
	return i
}

// catmullRom returns the weights of the samples at −1, 0, 1, 2 for a
// position f in [0, 1) after sample 0 (Keys' cubic with a = −0.5).
func catmullRom(f float64) [4]float32 {
	f2, f3 := f*f, f*f*f
	return [4]float32{
		float32((-f3 + 2*f2 - f) / 2),
		float32((3*f3 - 5*f2 + 2) / 2),
		float32((-3*f3 + 4*f2 + f) / 2),
		float32((f3 - f2) / 2),
	}
}

func clampIndex(i, n int) int {
	if i < 0 {
		return 0
	}
	if i >= n {
		return n - 1
	}
	return i
}

func clamp8(v float32) uint8 {
	if v <= 0 {
		return 0
	}
	if v >= 255 {
		return 255
	}
	return uint8(v + 0.5)
}

// resample fills dst (scale× src) one output row at a time: the four
// source rows around it are blended vertically into a float row, which is
// then blended horizontally into the output. Premultiplied colours keep
// transparent edges from darkening.
func resample(ctx context.Context, dst, src *image.RGBA, scale int) error {
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	dw, dh := dst.Rect.Dx(), dst.Rect.Dy()
	tp := newTaps(scale)
	row := make([]float32, sw*4)
	// Column taps: for each output x, the four clamped source columns.
	cols := make([][4]int, dw)
	for x := 0; x < dw; x++ {
		base := x/scale + tp.base[x%scale]
		for k := 0; k < 4; k++ {
			cols[x][k] = clampIndex(base+k, sw) * 4
		}
	}
	for y := 0; y < dh; y++ {
		if y%bandRows == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		base := y/scale + tp.base[y%scale]
		wy := tp.weight[y%scale]
		var rows [4][]uint8
		for k := 0; k < 4; k++ {
			sy := clampIndex(base+k, sh)
			rows[k] = src.Pix[sy*src.Stride : sy*src.Stride+sw*4]
		}
		for i := range row {
			row[i] = wy[0]*float32(rows[0][i]) + wy[1]*float32(rows[1][i]) +
				wy[2]*float32(rows[2][i]) + wy[3]*float32(rows[3][i])
		}
		out := dst.Pix[y*dst.Stride : y*dst.Stride+dw*4]
		for x := 0; x < dw; x++ {
			wx := tp.weight[x%scale]
			c := cols[x]
			var px [4]float32
			for ch := 0; ch < 4; ch++ {
				px[ch] = wx[0]*row[c[0]+ch] + wx[1]*row[c[1]+ch] + wx[2]*row[c[2]+ch] + wx[3]*row[c[3]+ch]
			}
			a := clamp8(px[3])
			o := out[x*4 : x*4+4 : x*4+4]
			o[3] = a
			for ch := 0; ch < 3; ch++ {
				// Keep premultiplied colour no brighter than its alpha:
				// Catmull-Rom overshoots at edges.
				v := clamp8(px[ch])
				if v > a {
					v = a
				}
				o[ch] = v
			}
		}
	}
	return nil
}

// unsharp sharpens img in place: out = in + amount·(in − blur(in)) where
// the difference exceeds the threshold, blur being the 3×3 binomial
// kernel (1 2 1)ᵀ(1 2 1)/16. Only three rows of the original are kept, so
// the extra memory is a few rows.
func unsharp(ctx context.Context, img *image.RGBA) error {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	n := w * 4
	rowAt := func(y int) []uint8 {
		y = clampIndex(y, h)
		return img.Pix[y*img.Stride : y*img.Stride+n]
	}
	prev := append([]uint8(nil), rowAt(-1)...)
	cur := append([]uint8(nil), rowAt(0)...)
	next := make([]uint8, n)
	vert := make([]int32, n) // vertical (1 2 1) sums of the original rows
	for y := 0; y < h; y++ {
		if y%bandRows == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		copy(next, rowAt(y+1)) // still the original: row y+1 is not yet written
		for i := 0; i < n; i++ {
			vert[i] = int32(prev[i]) + 2*int32(cur[i]) + int32(next[i])
		}
		out := rowAt(y)
		for x := 0; x < w; x++ {
			l, r := clampIndex(x-1, w)*4, clampIndex(x+1, w)*4
			i := x * 4
			for ch := 0; ch < 4; ch++ {
				blur := float32(vert[l+ch]+2*vert[i+ch]+vert[r+ch]) / 16
				orig := float32(cur[i+ch])
				d := orig - blur
				if d > unsharpThreshold || d < -unsharpThreshold {
					out[i+ch] = clamp8(orig + unsharpAmount*d)
				}
			}
			if a := out[i+3]; out[i] > a || out[i+1] > a || out[i+2] > a {
				for ch := 0; ch < 3; ch++ {
					if out[i+ch] > a {
						out[i+ch] = a
					}
				}
			}
		}
		prev, cur, next = cur, next, prev
	}
	return nil
}
