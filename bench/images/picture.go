package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
)

// productPhoto draws a synthetic product photo of size×size: a light studio
// background with a soft vertical gradient and grain, a soft shadow, and a
// coloured bottle-like object (a rounded body, a neck and a cap) with
// cylindrical shading, a woven texture and a label band.
func productPhoto(size int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	rng := rand.New(rand.NewPCG(19, 1024))
	s := float64(size)
	cx := s / 2
	bodyTop, bodyBottom, bodyHalf := 0.34*s, 0.86*s, 0.20*s
	neckTop, neckHalf := 0.20*s, 0.07*s
	capTop := 0.14 * s
	for y := range size {
		fy := float64(y)
		for x := range size {
			fx := float64(x)
			// Background: a light grey gradient with grain.
			bg := 246 - 18*fy/s + rng.NormFloat64()*1.5
			r, g, b := bg, bg-2, bg-5
			// Shadow: a soft ellipse under the object.
			dx, dy := (fx-cx)/(0.26*s), (fy-0.875*s)/(0.035*s)
			if d := dx*dx + dy*dy; d < 4 {
				k := 1 - 0.35*math.Exp(-d)
				r, g, b = r*k, g*k, b*k
			}
			half, inside := 0.0, false
			switch {
			case fy >= bodyTop && fy <= bodyBottom:
				// Rounded shoulders and base.
				half = bodyHalf
				if t := (bodyTop + 0.06*s - fy) / (0.06 * s); t > 0 {
					half = neckHalf + (bodyHalf-neckHalf)*math.Sqrt(1-t*t)
				}
				if t := (fy - (bodyBottom - 0.02*s)) / (0.02 * s); t > 0 {
					half = bodyHalf * math.Sqrt(1-t*t)
				}
				inside = math.Abs(fx-cx) <= half
			case fy >= neckTop && fy < bodyTop:
				half, inside = neckHalf, math.Abs(fx-cx) <= neckHalf
			}
			switch {
			case inside:
				// Cylindrical shading, a woven texture, a label band.
				u := (fx - cx) / half
				shade := 0.55 + 0.45*math.Sqrt(max(0, 1-u*u)) + 0.25*math.Exp(-math.Pow((u+0.45)/0.12, 2))
				tex := 1 + 0.06*math.Sin(fx*0.35)*math.Sin(fy*0.35) + rng.NormFloat64()*0.02
				r, g, b = 30*shade*tex, 110*shade*tex, 170*shade*tex
				if fy > 0.55*s && fy < 0.70*s {
					stripe := 0.9 + 0.1*math.Sin(fy*0.8)
					r, g, b = 235*shade*stripe, 200*shade*stripe, 80*shade*stripe
				}
			case fy >= capTop && fy < neckTop && math.Abs(fx-cx) <= neckHalf*1.15:
				u := (fx - cx) / (neckHalf * 1.15)
				shade := 0.5 + 0.5*math.Sqrt(max(0, 1-u*u))
				ridge := 0.85 + 0.15*math.Abs(math.Sin(fx*0.6))
				r, g, b = 60*shade*ridge, 60*shade*ridge, 65*shade*ridge
			}
			img.SetRGBA(x, y, color.RGBA{clamp(r), clamp(g), clamp(b), 255})
		}
	}
	return img
}

// texture draws a w×h picture of synthetic detail (crossed sine waves of
// several frequencies, colour gradients and grain): something an upscaler
// has real work on.
func texture(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(19, 1000))
	for y := range h {
		fy := float64(y)
		for x := range w {
			fx := float64(x)
			v := math.Sin(fx*0.05)*math.Cos(fy*0.07) + 0.5*math.Sin((fx+fy)*0.21) + 0.25*math.Sin(math.Hypot(fx-300, fy-400)*0.4)
			n := rng.NormFloat64() * 6
			r := 128 + 70*v + 40*fx/float64(w) + n
			g := 128 + 60*math.Sin(v*2+fy*0.01) + n
			b := 128 - 70*v + 40*fy/float64(h) + n
			img.SetRGBA(x, y, color.RGBA{clamp(r), clamp(g), clamp(b), 255})
		}
	}
	return img
}

func clamp(v float64) uint8 {
	return uint8(max(0, min(255, math.Round(v))))
}

func encodePNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
