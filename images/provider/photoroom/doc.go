// Package photoroom is the client of a scene-generation provider:
// Photoroom's Image Editing API v2, which cuts the product out of a photo
// and generates a background around it from a text prompt ("AI
// Backgrounds"). It is written against the provider's documented contract
// (https://docs.photoroom.com/getting-started/api-reference-openapi):
//
//	POST {base}/v2/edit                  base: https://image-api.photoroom.com
//	x-api-key: <api key>
//	Content-Type: multipart/form-data    every parameter in the body, none in the query
//
//	imageFile           the image (file part)
//	background.prompt   the scene to generate
//	outputSize          optional: "WIDTHxHEIGHT", "originalImage", "croppedSubject" or "auto"
//	export.format       "png" (default), "jpeg" or "webp"
//	background.seed     optional: the seed of an earlier answer, for a similar result
//
//	200  the image's bytes (image/png by default), with the headers
//	     pr-ai-background-seed (the seed used) and x-uncertainty-score
//	     (0 confident … 1 unsure; -1 for humans)
//	400  {"error":{"message":"…"}}
//	402  {"error":{"detail":"API credits exhausted. …"}}
//	500  {"error":{"message":"…"}}
//
// and the older {"detail","status_code","type"} shape of the same API's
// v1 endpoints, which the error parser reads too.
//
// Only the image and the prompt (with the output options) leave the
// service: no shop, product or customer data, no file name (the file part
// is named "image.<ext>").
//
// Every failure is a *ProviderError: retryable for 408, 429, 5xx, a
// timeout or a connection that failed (with the Retry-After hint);
// final for 400, 401, 402 (credits_exhausted), 403 and any other 4xx, for
// a redirect (never followed), an answer larger than the limit, and a 2xx
// whose bytes are not a PNG, JPEG or WebP image. Nothing it returns holds
// the API key, the prompt, the image or the provider's free text.
//
// It does not retry, queue, charge or store anything: the image-operation
// reactor does. It reads no environment and no global state.
//
// It imports the standard library and channels only.
package photoroom
