// Package studio is the embedded lifestyle-scene compositor, the default
// when no scene-generation provider is configured: it places a cut-out (an
// image with alpha, such as a background removal's result) on a studio
// scene drawn procedurally — no model, no network, no asset files — with a
// soft contact shadow and, on glossy surfaces, a faint reflection.
//
// Scenes: studio-white, studio-gradient, marble-surface, wood-surface
// (Scenes lists them). The result is a 1024×1024 *image.RGBA; the
// object's visible part (its alpha bounding box) is fitted inside margins
// and stands on the scene's floor line. An input without any transparent
// pixel is taken whole as the object. Its metadata says
// "engine": "embedded-studio" and the scene, so a client can tell it from a
// provider's generated scene.
//
// It imports the standard library, domain, images/engine and
// golang.org/x/image/draw.
package studio
