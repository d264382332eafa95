package engine

import (
	"context"
	"image"
)

// Input is what an engine runs on: the decoded image and the operation's
// options as the API received them (query parameters or multipart fields).
type Input struct {
	// Image is the decoded source image. Engines never modify it.
	Image image.Image
	// Options holds the operation's options by name (for example "scale"
	// or "scene"). Engines ignore names they do not know.
	Options map[string]string
}

// Output is an engine's result.
type Output struct {
	// Image is the result, an *image.RGBA or *image.NRGBA the caller owns.
	Image image.Image
	// Metadata says how the result was made, for the operation's record
	// and the API's answer: for example "method": "catmull-rom+unsharp"
	// or "engine": "embedded-studio", "scene": "marble-surface". It never
	// holds personal data or secrets.
	Metadata map[string]string
}

// Engine runs one kind of image operation.
//
// Run is safe to call from several goroutines at once. It returns a
// *domain.Error with CodeInvalid naming the option for a bad option (the
// API answers 422 naming that field), ctx.Err() once ctx is done (engines
// check it between bands of work, so a cancelled run stops promptly), and
// any other error for a failure of the engine itself. It never panics on
// any image or options.
type Engine interface {
	// Name is the engine's stable name, as recorded in an operation's
	// events (for example "upscale" or "embedded-studio").
	Name() string
	// Run computes the result of in.
	Run(ctx context.Context, in Input) (Output, error)
}
