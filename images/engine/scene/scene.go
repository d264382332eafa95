// Package scene is the lifestyle-scene engine of the image operations: a
// product photo placed in a scene. Without a provider (Embedded) the
// product is cut out (unless the picture already has a transparent
// background) and composited onto one of the built-in studio scenes of
// images/engine/studio, and the result's metadata says so; with a
// provider (Provider) the picture and the scene's prompt go to the
// scene-generation API (Photoroom's v2 edit) and its image comes back.
//
// It imports domain, images/engine, images/engine/studio and
// images/provider/photoroom.
package scene

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/draw"
	"image/png"
	"slices"
	"unicode/utf8"

	_ "golang.org/x/image/webp"
	_ "image/jpeg" // decodes the provider's JPEG answers

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/images/engine"
	"github.com/cgp-platform/cgp/images/engine/studio"
	"github.com/cgp-platform/cgp/images/input"
	"github.com/cgp-platform/cgp/images/provider/photoroom"
)

// MaxPromptBytes bounds a prompt (the provider's own bound).
const MaxPromptBytes = photoroom.MaxPromptBytes

// ErrNoCutout is returned by Embedded for an opaque picture when no
// background-removal engine runs on this server.
var ErrNoCutout = errors.New("scene: the picture has no transparent background and no background-removal engine runs on this server")

// prompts are the presets' prompts for a provider.
var prompts = map[string]string{
	"studio-white":    "on a seamless white studio backdrop with a soft contact shadow",
	"studio-gradient": "on a soft grey gradient studio backdrop with gentle lighting and a soft shadow",
	"marble-surface":  "on a polished white marble surface with a soft reflection, bright and airy",
	"wood-surface":    "on a warm oak wooden table top in soft daylight",
}

// Presets lists the scene presets, the same for both engines.
func Presets() []string { return studio.Scenes() }

// CheckOptions validates a scene request's options before it is accepted:
// "scene" a preset (default studio-white) or "prompt" (provider only,
// 1 to MaxPromptBytes of printable UTF-8), never both; "reflection" on or
// off (embedded only). It names the field of a bad option.
func CheckOptions(opts map[string]string, provider bool) error {
	sc, prompt := opts["scene"], opts["prompt"]
	if sc != "" && prompt != "" {
		return domain.Invalid("prompt", "give a scene preset or a prompt, not both")
	}
	if sc != "" && !slices.Contains(Presets(), sc) {
		return domain.Invalid("scene", "unknown scene %q; the presets are studio-white, studio-gradient, marble-surface and wood-surface", input.OptionField(sc))
	}
	if prompt != "" {
		if !provider {
			return domain.Invalid("prompt", "a prompt needs a scene-generation provider, which this server has not; choose a scene preset")
		}
		if len(prompt) > MaxPromptBytes || !utf8.ValidString(prompt) {
			return domain.Invalid("prompt", "the prompt must be valid UTF-8 of at most %d bytes", MaxPromptBytes)
		}
	}
	switch opts["reflection"] {
	case "", "on", "off":
	default:
		return domain.Invalid("reflection", "must be on or off")
	}
	for k := range opts {
		if k != "scene" && k != "prompt" && k != "reflection" {
			return domain.Invalid(input.OptionField(k), "unknown option; the options are scene, prompt and reflection")
		}
	}
	return nil
}

// Embedded composites the product onto a built-in scene.
type Embedded struct {
	cutout engine.Engine
	studio *studio.Engine
}

var _ engine.Engine = (*Embedded)(nil)

// NewEmbedded returns the embedded engine; cutout (nil: none) cuts opaque
// pictures out first.
func NewEmbedded(cutout engine.Engine) *Embedded {
	return &Embedded{cutout: cutout, studio: studio.New()}
}

// Name implements engine.Engine.
func (e *Embedded) Name() string { return studio.EngineName }

// Run implements engine.Engine.
func (e *Embedded) Run(ctx context.Context, in engine.Input) (engine.Output, error) {
	img := in.Image
	cut := "supplied"
	if !hasTransparency(img) {
		if e.cutout == nil {
			return engine.Output{}, ErrNoCutout
		}
		out, err := e.cutout.Run(ctx, engine.Input{Image: img})
		if err != nil {
			return engine.Output{}, err
		}
		img, cut = out.Image, out.Metadata["engine"]
	}
	out, err := e.studio.Run(ctx, engine.Input{Image: img, Options: in.Options})
	if err != nil {
		return engine.Output{}, err
	}
	out.Metadata["cutout"] = cut
	out.Metadata["generator"] = "embedded compositor (built-in scene, no generative model)"
	return out, nil
}

// hasTransparency reports whether some pixel of img is not fully opaque
// (a picture already cut out).
func hasTransparency(img image.Image) bool {
	if o, ok := img.(interface{ Opaque() bool }); ok {
		return !o.Opaque()
	}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if _, _, _, a := img.At(x, y).RGBA(); a != 0xffff {
				return true
			}
		}
	}
	return false
}

// Provider sends the picture to the scene-generation API.
type Provider struct{ client *photoroom.Client }

var _ engine.Engine = (*Provider)(nil)

// NewProvider returns the provider engine.
func NewProvider(c *photoroom.Client) *Provider { return &Provider{client: c} }

// ProviderName is the provider engine's stable name.
const ProviderName = "photoroom-v2-edit"

// Name implements engine.Engine.
func (p *Provider) Name() string { return ProviderName }

// Run implements engine.Engine: the picture goes as PNG with the prompt
// (the preset's, or the caller's); the answer is decoded.
func (p *Provider) Run(ctx context.Context, in engine.Input) (engine.Output, error) {
	meta := map[string]string{"engine": ProviderName, "generator": "scene-generation provider"}
	prompt := in.Options["prompt"]
	if prompt == "" {
		name := in.Options["scene"]
		if name == "" {
			name = studio.DefaultScene
		}
		prompt = prompts[name]
		meta["scene"] = name
	} else {
		meta["scene"] = "prompt"
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, in.Image); err != nil {
		return engine.Output{}, err
	}
	res, err := p.client.Generate(ctx, photoroom.Scene{Image: buf.Bytes(), Prompt: prompt})
	if err != nil {
		return engine.Output{}, err
	}
	img, _, err := image.Decode(bytes.NewReader(res.Image))
	if err != nil {
		return engine.Output{}, &photoroom.ProviderError{Code: photoroom.CodeInvalidAnswer}
	}
	rgba := image.NewNRGBA(image.Rect(0, 0, img.Bounds().Dx(), img.Bounds().Dy()))
	draw.Draw(rgba, rgba.Bounds(), img, img.Bounds().Min, draw.Src)
	return engine.Output{Image: rgba, Metadata: meta}, nil
}
