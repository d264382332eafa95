// Package upscale is the classical upscaling engine: a separable
// Catmull-Rom (bicubic, a = −0.5) resampler by an integer factor of 2 or 4
// followed by an unsharp mask (radius 1 px, amount 0.5, threshold 2/255).
// It is not a super-resolution network and says so: its metadata's
// "method" is "catmull-rom+unsharp".
//
// Memory is bounded and known before any work: the result is an
// *image.RGBA of w·h·scale²·4 bytes, plus a premultiplied copy of the
// source (w·h·4 bytes) and a few rows of scratch. Config.MaxOutputPixels
// refuses (422 naming "scale") a result larger than its limit.
//
// It imports the standard library, domain, images/engine and
// golang.org/x/image/draw.
package upscale
