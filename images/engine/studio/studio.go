package studio

import (
	"context"
	"fmt"
	"image"
	"math"
	"strconv"
	"strings"

	"golang.org/x/image/draw"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/images/engine"
)

// Size is the width and height of every result.
const Size = 1024

// DefaultScene is the scene used when the option "scene" is absent.
const DefaultScene = "studio-white"

// EngineName is the engine's name and its metadata's "engine".
const EngineName = "embedded-studio"

// Layout, as fractions of Size: the object's visible part fits in
// maxWidth × (its base − topMargin) and its base stands a little in front
// of the floor line.
const (
	maxWidth   = 0.70
	topMargin  = 0.10
	baseOffset = 0.06
)

// Shadows: a broad soft one (the silhouette flattened, offset back and to
// the right, widely blurred) and a tight contact one right at the base.
type shadow struct {
	squash   float64 // height of the flattened silhouette / object height
	dx, dy   float64 // offset as a fraction of Size
	radius   float64 // box-blur radius as a fraction of Size (three passes)
	strength float64 // darkening at full coverage
}

var shadows = []shadow{
	{squash: 0.10, dx: 0.012, dy: -0.004, radius: 0.022, strength: 0.38},
	{squash: 0.025, dx: 0, dy: 0.002, radius: 0.005, strength: 0.45},
}

// Reflection: the object mirrored under its base over this fraction of its
// height, fading from reflectionAlpha to nothing.
const (
	reflectionDepth = 0.35
	reflectionAlpha = 0.22
)

// alphaVisible is the alpha above which a pixel belongs to the object.
const alphaVisible = 8

// bandRows is how many rows are drawn between two checks of the context.
const bandRows = 32

// Engine composites cut-outs onto the built-in scenes. It holds no
// mutable state.
type Engine struct{}

var _ engine.Engine = (*Engine)(nil)

// New returns the compositor.
func New() *Engine { return &Engine{} }

// Name returns "embedded-studio".
func (e *Engine) Name() string { return EngineName }

// Run composites in.Image onto the scene named by the option "scene"
// (DefaultScene when absent). The option "reflection" ("on" or "off")
// overrides the scene's default (on for the glossy scenes, off for
// wood-surface). Validation failures name "scene", "reflection" or
// "image" (no pixels, or every pixel fully transparent).
func (e *Engine) Run(ctx context.Context, in engine.Input) (engine.Output, error) {
	name := in.Options["scene"]
	if name == "" {
		name = DefaultScene
	}
	sc, err := lookup(name)
	if err != nil {
		return engine.Output{}, err
	}
	reflect := sc.glossy
	switch in.Options["reflection"] {
	case "":
	case "on":
		reflect = true
	case "off":
		reflect = false
	default:
		return engine.Output{}, domain.Invalid("reflection", "must be on or off")
	}
	if in.Image == nil || in.Image.Bounds().Empty() {
		return engine.Output{}, domain.Invalid("image", "has no pixels")
	}
	if err := ctx.Err(); err != nil {
		return engine.Output{}, err
	}

	src := image.NewRGBA(image.Rect(0, 0, in.Image.Bounds().Dx(), in.Image.Bounds().Dy()))
	draw.Draw(src, src.Bounds(), in.Image, in.Image.Bounds().Min, draw.Src)
	box := visibleBox(src)
	if box.Empty() {
		return engine.Output{}, domain.Invalid("image", "is fully transparent: there is no object to place")
	}

	canvas := image.NewRGBA(image.Rect(0, 0, Size, Size))
	if err := sc.draw(ctx, canvas); err != nil {
		return engine.Output{}, err
	}
	place := placement(box.Size(), sc.floor)
	obj := image.NewRGBA(image.Rect(0, 0, place.Dx(), place.Dy()))
	draw.CatmullRom.Scale(obj, obj.Bounds(), src, box, draw.Src, nil)
	if err := ctx.Err(); err != nil {
		return engine.Output{}, err
	}

	for _, s := range shadows {
		if err := s.cast(ctx, canvas, obj, place); err != nil {
			return engine.Output{}, err
		}
	}
	if reflect {
		reflection(canvas, obj, place)
	}
	draw.Draw(canvas, place, obj, image.Point{}, draw.Over)

	onOff := map[bool]string{true: "on", false: "off"}
	return engine.Output{Image: canvas, Metadata: map[string]string{
		"engine":     EngineName,
		"scene":      name,
		"reflection": onOff[reflect],
		"width":      strconv.Itoa(Size),
		"height":     strconv.Itoa(Size),
		"placement":  fmt.Sprintf("%d,%d,%d,%d", place.Min.X, place.Min.Y, place.Max.X, place.Max.Y),
	}}, nil
}

func lookup(name string) (scene, error) {
	s, ok := scenes[name]
	if !ok {
		return scene{}, domain.Invalid("scene", "must be one of %s", strings.Join(Scenes(), ", "))
	}
	return s, nil
}

// visibleBox is the bounding box of the pixels whose alpha exceeds
// alphaVisible: the whole image when it has no transparent pixel, empty
// when it is all transparent.
func visibleBox(img *image.RGBA) image.Rectangle {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	x0, y0, x1, y1 := w, h, 0, 0
	for y := 0; y < h; y++ {
		row := img.Pix[y*img.Stride : y*img.Stride+w*4]
		for x := 0; x < w; x++ {
			if row[x*4+3] > alphaVisible {
				x0, x1 = min(x0, x), max(x1, x+1)
				y0, y1 = min(y0, y), max(y1, y+1)
			}
		}
	}
	if x1 <= x0 || y1 <= y0 {
		return image.Rectangle{}
	}
	return image.Rect(x0, y0, x1, y1)
}

// placement fits an object of size sz on the canvas: centred, its base
// just in front of the floor line, within the margins.
func placement(sz image.Point, floor float64) image.Rectangle {
	base := (floor + baseOffset) * Size
	maxW, maxH := maxWidth*Size, base-topMargin*Size
	k := math.Min(maxW/float64(sz.X), maxH/float64(sz.Y))
	w := max(1, int(math.Round(float64(sz.X)*k)))
	h := max(1, int(math.Round(float64(sz.Y)*k)))
	x0 := (Size - w) / 2
	y1 := int(math.Round(base))
	return image.Rect(x0, y1-h, x0+w, y1)
}

// cast darkens the canvas under the object with the silhouette flattened
// to s.squash of its height, centred on the base, offset and blurred.
func (s shadow) cast(ctx context.Context, canvas, obj *image.RGBA, place image.Rectangle) error {
	ow, oh := obj.Rect.Dx(), obj.Rect.Dy()
	sh := max(2, int(math.Round(float64(oh)*s.squash)))
	r := max(1, int(math.Round(s.radius*Size)))
	pad := 3*r + 1
	top := place.Max.Y - sh/2 + int(math.Round(s.dy*Size))
	left := place.Min.X + int(math.Round(s.dx*Size))
	// The mask covers the flattened silhouette and the blur's reach.
	region := image.Rect(left-pad, top-pad, left+ow+pad, top+sh+pad)
	mw, mh := region.Dx(), region.Dy()
	mask := make([]float32, mw*mh)
	for my := 0; my < sh; my++ {
		oy := min(oh-1, my*oh/sh)
		orow := obj.Pix[oy*obj.Stride:]
		mrow := mask[(pad+my)*mw+pad:]
		for ox := 0; ox < ow; ox++ {
			mrow[ox] = float32(orow[ox*4+3]) / 255
		}
	}
	tmp := make([]float32, max(mw, mh))
	for pass := 0; pass < 3; pass++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		for y := 0; y < mh; y++ {
			boxBlur(mask[y*mw:(y+1)*mw], 1, r, tmp)
		}
		for x := 0; x < mw; x++ {
			boxBlur(mask[x:], mw, r, tmp[:mh])
		}
	}
	vis := region.Intersect(canvas.Rect)
	for y := vis.Min.Y; y < vis.Max.Y; y++ {
		mrow := mask[(y-region.Min.Y)*mw:]
		crow := canvas.Pix[y*canvas.Stride:]
		for x := vis.Min.X; x < vis.Max.X; x++ {
			m := mrow[x-region.Min.X]
			if m <= 0 {
				continue
			}
			f := 1 - float32(s.strength)*min(m, 1)
			for ch := 0; ch < 3; ch++ {
				crow[x*4+ch] = uint8(float32(crow[x*4+ch])*f + 0.5)
			}
		}
	}
	return nil
}

// boxBlur blurs the n = len(tmp) values v[0], v[stride], … in place with a
// box of radius r, treating values outside as zero.
func boxBlur(v []float32, stride, r int, tmp []float32) {
	n := len(tmp)
	for i := 0; i < n; i++ {
		tmp[i] = v[i*stride]
	}
	var sum float32
	for i := 0; i <= r && i < n; i++ {
		sum += tmp[i]
	}
	norm := 1 / float32(2*r+1)
	for i := 0; i < n; i++ {
		v[i*stride] = sum * norm
		if j := i + r + 1; j < n {
			sum += tmp[j]
		}
		if j := i - r; j >= 0 {
			sum -= tmp[j]
		}
	}
}

// reflection draws the object mirrored under its base, fading out.
func reflection(canvas, obj *image.RGBA, place image.Rectangle) {
	ow, oh := obj.Rect.Dx(), obj.Rect.Dy()
	depth := int(float64(oh) * reflectionDepth)
	for r := 0; r < depth; r++ {
		y := place.Max.Y + r
		if y >= canvas.Rect.Max.Y {
			break
		}
		t := 1 - float64(r)/float64(depth)
		f := float32(reflectionAlpha * t * t)
		orow := obj.Pix[(oh-1-r)*obj.Stride:]
		crow := canvas.Pix[y*canvas.Stride:]
		for ox := 0; ox < ow; ox++ {
			x := place.Min.X + ox
			if x < 0 || x >= canvas.Rect.Max.X {
				continue
			}
			sa := float32(orow[ox*4+3]) * f
			if sa == 0 {
				continue
			}
			for ch := 0; ch < 3; ch++ {
				d := float32(crow[x*4+ch])
				crow[x*4+ch] = uint8(min(255, float32(orow[ox*4+ch])*f+d*(1-sa/255)+0.5))
			}
		}
	}
}
