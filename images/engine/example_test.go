package engine_test

import (
	"context"
	"fmt"
	"image"

	"github.com/cgp-platform/cgp/images/engine"
	"github.com/cgp-platform/cgp/images/engine/studio"
	"github.com/cgp-platform/cgp/images/engine/upscale"
)

func Example() {
	engines := []engine.Engine{upscale.New(upscale.Config{}), studio.New()}
	in := engine.Input{
		Image:   image.NewNRGBA(image.Rect(0, 0, 320, 240)),
		Options: map[string]string{"scale": "4", "scene": "beach"},
	}
	for _, e := range engines {
		out, err := e.Run(context.Background(), in)
		if err != nil {
			fmt.Println(e.Name()+":", err) // a *domain.Error: 422 naming the field
			continue
		}
		fmt.Println(e.Name()+":", out.Image.Bounds().Dx(), out.Image.Bounds().Dy(), out.Metadata["method"])
	}
	// Output:
	// upscale: 1280 960 catmull-rom+unsharp
	// embedded-studio: scene: must be one of marble-surface, studio-gradient, studio-white, wood-surface
}
