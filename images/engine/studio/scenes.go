package studio

import (
	"context"
	"image"
	"math"
)

// scene draws one preset's backdrop. floor is the row where the wall
// meets the surface, as a fraction of the height; glossy surfaces get a
// reflection by default.
type scene struct {
	floor  float64
	glossy bool
	// paint returns the colour of the pixel at (u, v) in [0,1)², with
	// 0 ≤ r, g, b ≤ 1.
	paint func(u, v, floor float64) (r, g, b float64)
}

var scenes = map[string]scene{
	"studio-white":    {floor: 0.78, glossy: true, paint: paintWhite},
	"studio-gradient": {floor: 0.78, glossy: true, paint: paintGradient},
	"marble-surface":  {floor: 0.70, glossy: true, paint: paintMarble},
	"wood-surface":    {floor: 0.70, glossy: false, paint: paintWood},
}

// sweep is a seamless studio backdrop: light from above-centre, a gentle
// vignette towards the edges.
func sweep(u, v float64) float64 {
	dx, dy := u-0.5, v-0.35
	return 1 - 0.22*(dx*dx+dy*dy)
}

func paintWhite(u, v, floor float64) (float64, float64, float64) {
	l := 0.97 * sweep(u, v)
	if v > floor { // the floor catches a little more light
		l = math.Min(1, l+0.015)
	}
	return l, l, l * 0.995
}

func paintGradient(u, v, _ float64) (float64, float64, float64) {
	// Dusty blue at the top to a warm light grey at the bottom.
	t := smoothstep(0, 1, v)
	s := sweep(u, v)
	return s * mix(0.62, 0.90, t), s * mix(0.70, 0.88, t), s * mix(0.80, 0.85, t)
}

func paintMarble(u, v, floor float64) (float64, float64, float64) {
	if v < floor {
		l := 0.86 * sweep(u, v)
		return l, l * 0.98, l * 0.95 // warm plaster wall
	}
	// Perspective: lines of constant x converge towards the horizon.
	d := (v - floor) / (1 - floor)
	x, y := (u-0.5)/(0.55+0.45*d)*4, d*4
	vein := math.Abs(math.Sin(x*1.3 + y*2.1 + 4*fbm(x*0.8, y*0.8, 5)))
	vein = math.Pow(vein, 0.25) // thin dark veins, mostly white stone
	l := (0.78 + 0.16*vein) * (0.94 + 0.06*d)
	return l, l, l * 1.01
}

func paintWood(u, v, floor float64) (float64, float64, float64) {
	if v < floor {
		l := 0.80 * sweep(u, v)
		return l * 0.97, l * 0.96, l * 0.93 // off-white wall
	}
	d := (v - floor) / (1 - floor)
	x := (u - 0.5) / (0.6 + 0.4*d) * 6 // planks run away from the viewer, converging
	plank := math.Floor(x)
	grain := math.Sin((x-plank)*22+6*fbm(x*2, d*12+plank*7, 4)) * 0.5
	seam := 1.0
	if f := x - plank; f < 0.025 || f > 0.975 {
		seam = 0.55
	}
	tone := 0.85 + 0.15*hash(int(plank), 7) // each plank its own shade
	l := (0.9 + 0.1*grain) * tone * seam * (0.85 + 0.15*d)
	return 0.62 * l, 0.42 * l, 0.26 * l
}

func mix(a, b, t float64) float64 { return a + (b-a)*t }

func smoothstep(e0, e1, x float64) float64 {
	t := math.Max(0, math.Min(1, (x-e0)/(e1-e0)))
	return t * t * (3 - 2*t)
}

// hash is a deterministic integer hash in [0, 1).
func hash(x, y int) float64 {
	h := uint32(x)*374761393 + uint32(y)*668265263
	h = (h ^ (h >> 13)) * 1274126177
	h ^= h >> 16
	return float64(h) / (1 << 32)
}

// noise is value noise: hashed lattice values, smoothly interpolated.
func noise(x, y float64) float64 {
	x0, y0 := math.Floor(x), math.Floor(y)
	fx, fy := x-x0, y-y0
	ix, iy := int(x0), int(y0)
	sx, sy := fx*fx*(3-2*fx), fy*fy*(3-2*fy)
	a := mix(hash(ix, iy), hash(ix+1, iy), sx)
	b := mix(hash(ix, iy+1), hash(ix+1, iy+1), sx)
	return mix(a, b, sy)
}

// fbm sums octaves of noise (fractal Brownian motion), in [0, 1).
func fbm(x, y float64, octaves int) float64 {
	var sum, amp, norm float64 = 0, 0.5, 0
	for i := 0; i < octaves; i++ {
		sum += amp * noise(x, y)
		norm += amp
		x, y, amp = x*2, y*2, amp/2
	}
	return sum / norm
}

// Scenes returns the names of the built-in scenes, sorted.
func Scenes() []string {
	return []string{"marble-surface", "studio-gradient", "studio-white", "wood-surface"}
}

// Background draws the empty scene name at w×h. It returns a validation
// failure naming "scene" for an unknown name, and ctx.Err() once ctx is
// done (checked between bands of rows).
func Background(ctx context.Context, name string, w, h int) (*image.RGBA, error) {
	s, err := lookup(name)
	if err != nil {
		return nil, err
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	return img, s.draw(ctx, img)
}

func (s scene) draw(ctx context.Context, img *image.RGBA) error {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	for y := 0; y < h; y++ {
		if y%bandRows == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		v := (float64(y) + 0.5) / float64(h)
		row := img.Pix[y*img.Stride : y*img.Stride+w*4]
		for x := 0; x < w; x++ {
			r, g, b := s.paint((float64(x)+0.5)/float64(w), v, s.floor)
			// A little dither keeps gradients free of banding.
			dz := (hash(x, y) - 0.5) / 255
			row[x*4] = unit8(r + dz)
			row[x*4+1] = unit8(g + dz)
			row[x*4+2] = unit8(b + dz)
			row[x*4+3] = 255
		}
	}
	return nil
}

func unit8(v float64) uint8 {
	return uint8(math.Max(0, math.Min(255, math.Round(v*255))))
}
