package input_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"net/http/httptest"

	"github.com/cgp-platform/cgp/images/input"
)

func ExampleParse() {
	var body bytes.Buffer
	_ = png.Encode(&body, image.NewGray(image.Rect(0, 0, 640, 480)))
	r := httptest.NewRequest("POST", "/api/v1/images/upscales?scale=2", &body)
	r.Header.Set("Content-Type", "image/png")

	img, err := input.Parse(r, input.Config{})
	if err != nil {
		fmt.Println(err) // httpapi.WriteError answers it with the envelope
		return
	}
	fmt.Println(img.Format.MediaType(), img.Width, img.Height, img.Options["scale"])
	// Output: image/png 640 480 2
}
