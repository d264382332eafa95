// Package bgremove removes the background of a product photo locally: it
// runs the ISNet (DIS) segmentation network with ONNX Runtime through
// github.com/yalue/onnxruntime_go, with no provider and no network.
//
// An Engine answers Run(ctx, image.Image) (image.Image, error), the shape
// that every image engine of issue 19 takes: the picture in, the result
// out. Run resizes the picture to the network's 1024×1024 input (bilinear,
// as the model's packagers do), normalises each channel as (v−128)/256,
// runs the session, resizes the 1024×1024 mask back to the picture's size
// and returns an *image.NRGBA: the picture's colours with the mask as alpha
// (multiplied with the picture's own alpha).
//
// The artefacts are not in the repository: `make models`
// (scripts/fetch-models.sh) fetches ONNX Runtime's shared library
// (LibraryFile) and the model (ModelFile) into .cache/models and verifies
// their SHA-256. Config names both paths; cmd fills it (CGP_ONNXRUNTIME_LIB,
// CGP_BGREMOVE_MODEL), this package never reads the environment.
//
// Memory and concurrency: one session holds about 1.9 GB while it runs a
// 1024×1024 picture on the CPU. New opens Config.Workers sessions (1 by
// default, at most 2 on the 24 GB, 2-core machines of this project) and
// each Run borrows one, so at most Workers pictures are in the network at
// once and a caller beyond that waits (or gives up with its context).
// ONNX Runtime's environment is process-wide: the first New initialises it
// from LibraryPath and it stays for the life of the process; a later New
// with another library path is refused.
//
// It imports the standard library and onnxruntime_go only.
package bgremove
