// Package engine is the port of the image engines that run image
// operations (background removal, upscaling, lifestyle scenes): an Engine
// takes a decoded image and its options and returns the resulting image
// and metadata that says honestly how the result was made.
//
// Implementations: upscale (a classical Catmull-Rom resampler with an
// unsharp mask) and studio (the embedded studio-scene compositor). They
// live in sub-packages named after what they do; nothing here knows them.
//
// It imports only the standard library and domain.
package engine
