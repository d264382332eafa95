package photoroom_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"

	"github.com/cgp-platform/cgp/images/provider/photoroom"
)

// A product photo placed in a generated scene; a failure says whether the
// reactor may try again.
func ExampleClient_Generate() {
	var photo bytes.Buffer
	png.Encode(&photo, image.NewNRGBA(image.Rect(0, 0, 4, 4)))

	// Stands in for https://image-api.photoroom.com.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-api-key") != "sk_pr_example" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("pr-ai-background-seed", "7")
		w.Write(photo.Bytes())
	}))
	defer api.Close()

	client, err := photoroom.New(photoroom.Config{BaseURL: api.URL, APIKey: "sk_pr_example"})
	if err != nil {
		panic(err)
	}
	res, err := client.Generate(context.Background(), photoroom.Scene{Image: photo.Bytes(), Prompt: "on a wooden table"})
	fmt.Println(res.ContentType, res.Seed, err)

	client, _ = photoroom.New(photoroom.Config{BaseURL: api.URL, APIKey: "sk_pr_wrong"})
	_, err = client.Generate(context.Background(), photoroom.Scene{Image: photo.Bytes(), Prompt: "on a wooden table"})
	var pe *photoroom.ProviderError
	if errors.As(err, &pe) {
		fmt.Println(pe.Code, pe.Retryable)
	}
	// Output:
	// image/png 7 <nil>
	// forbidden false
}
