// Package cutout is the background-removal engine of the image
// operations: it puts a segmentation network (bgremove's ISNet on ONNX
// Runtime) behind the engine port, and says so in the result's metadata.
//
// It imports images/engine only.
package cutout

import (
	"context"
	"image"

	"github.com/cgp-platform/cgp/images/engine"
)

// Name is the engine's stable name.
const Name = "isnet-onnxruntime"

// Remover removes a picture's background (bgremove.Engine).
type Remover interface {
	Run(ctx context.Context, img image.Image) (image.Image, error)
}

// Engine is background removal behind the engine port.
type Engine struct{ remover Remover }

var _ engine.Engine = (*Engine)(nil)

// New returns the engine around r.
func New(r Remover) *Engine { return &Engine{remover: r} }

// Name implements engine.Engine.
func (e *Engine) Name() string { return Name }

// Run implements engine.Engine: the picture with the mask as its alpha,
// at the picture's size. It takes no option.
func (e *Engine) Run(ctx context.Context, in engine.Input) (engine.Output, error) {
	out, err := e.remover.Run(ctx, in.Image)
	if err != nil {
		return engine.Output{}, err
	}
	return engine.Output{Image: out, Metadata: map[string]string{"engine": Name, "model": "isnet-general-use (quantized)",
		"format": "png with alpha"}}, nil
}
