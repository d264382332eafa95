package bgremove

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"os"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// The artefacts' file names in the directory that scripts/fetch-models.sh
// fills (.cache/models by default).
const (
	// LibraryFile is ONNX Runtime 1.24.3 for linux-x64, the version whose C
	// API onnxruntime_go v1.27.0 is built against.
	LibraryFile = "libonnxruntime.so.1.24.3"
	// ModelFile is the quantized ISNet model ("small", 44 MB).
	ModelFile = "isnet-small.onnx"
)

// Resolution is the side of the square picture the network takes and of
// the mask it gives back.
const Resolution = 1024

// MaxWorkers bounds Config.Workers: each session takes about 1.9 GB.
const MaxWorkers = 2

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("bgremove: engine closed")

// Config configures an Engine.
type Config struct {
	// LibraryPath is the path of ONNX Runtime's shared library (LibraryFile).
	LibraryPath string
	// ModelPath is the path of the ISNet model (ModelFile).
	ModelPath string
	// Workers is the number of sessions, each running one picture at a
	// time; 1 when zero, at most MaxWorkers.
	Workers int
	// Threads is the number of intra-op threads of each session; zero
	// leaves ONNX Runtime's default (one per core).
	Threads int
}

func (c *Config) setDefaults() {
	if c.Workers == 0 {
		c.Workers = 1
	}
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.LibraryPath == "" {
		errs = append(errs, errors.New("library path is empty"))
	} else if _, err := os.Stat(c.LibraryPath); err != nil {
		errs = append(errs, fmt.Errorf("library %s: %w (run `make models`)", c.LibraryPath, err))
	}
	if c.ModelPath == "" {
		errs = append(errs, errors.New("model path is empty"))
	} else if _, err := os.Stat(c.ModelPath); err != nil {
		errs = append(errs, fmt.Errorf("model %s: %w (run `make models`)", c.ModelPath, err))
	}
	if c.Workers < 1 || c.Workers > MaxWorkers {
		errs = append(errs, fmt.Errorf("workers %d: want 1 to %d", c.Workers, MaxWorkers))
	}
	if c.Threads < 0 {
		errs = append(errs, fmt.Errorf("threads %d: want 0 or more", c.Threads))
	}
	return errors.Join(errs...)
}

// environment guards ONNX Runtime's process-wide environment, which the C
// library allows once per process: it is global because the library is.
var environment struct {
	sync.Mutex
	library string
}

func initEnvironment(library string) error {
	environment.Lock()
	defer environment.Unlock()
	if ort.IsInitialized() {
		if environment.library != library {
			return fmt.Errorf("onnxruntime already initialised from %s", environment.library)
		}
		return nil
	}
	ort.SetSharedLibraryPath(library)
	if err := ort.InitializeEnvironment(); err != nil {
		return fmt.Errorf("initialise onnxruntime from %s: %w", library, err)
	}
	environment.library = library
	return nil
}

// Engine runs background removal. Its methods are safe for concurrent use.
type Engine struct {
	workers chan *worker
	all     []*worker
	done    chan struct{}
	close   sync.Once
}

// worker is one session with its preallocated input and output tensors.
type worker struct {
	session *ort.AdvancedSession
	input   *ort.Tensor[float32]
	output  *ort.Tensor[float32]
	run     *ort.RunOptions
}

// New initialises ONNX Runtime (once per process) and opens cfg.Workers
// sessions of the model.
func New(cfg Config) (*Engine, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bgremove config: %w", err)
	}
	if err := initEnvironment(cfg.LibraryPath); err != nil {
		return nil, err
	}
	e := &Engine{workers: make(chan *worker, cfg.Workers), done: make(chan struct{})}
	for range cfg.Workers {
		w, err := newWorker(cfg)
		if err != nil {
			e.destroy()
			return nil, err
		}
		e.all = append(e.all, w)
		e.workers <- w
	}
	return e, nil
}

func newWorker(cfg Config) (w *worker, err error) {
	w = &worker{}
	defer func() {
		if err != nil {
			w.destroy()
		}
	}()
	if w.input, err = ort.NewEmptyTensor[float32](ort.NewShape(1, 3, Resolution, Resolution)); err != nil {
		return nil, fmt.Errorf("input tensor: %w", err)
	}
	if w.output, err = ort.NewEmptyTensor[float32](ort.NewShape(1, 1, Resolution, Resolution)); err != nil {
		return nil, fmt.Errorf("output tensor: %w", err)
	}
	if w.run, err = ort.NewRunOptions(); err != nil {
		return nil, fmt.Errorf("run options: %w", err)
	}
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("session options: %w", err)
	}
	defer opts.Destroy()
	if cfg.Threads > 0 {
		if err = opts.SetIntraOpNumThreads(cfg.Threads); err != nil {
			return nil, fmt.Errorf("intra-op threads: %w", err)
		}
	}
	w.session, err = ort.NewAdvancedSession(cfg.ModelPath, []string{"input"}, []string{"output"},
		[]ort.Value{w.input}, []ort.Value{w.output}, opts)
	if err != nil {
		return nil, fmt.Errorf("open model %s: %w", cfg.ModelPath, err)
	}
	return w, nil
}

func (w *worker) destroy() {
	if w.session != nil {
		w.session.Destroy()
	}
	if w.run != nil {
		w.run.Destroy()
	}
	if w.input != nil {
		w.input.Destroy()
	}
	if w.output != nil {
		w.output.Destroy()
	}
}

// Run removes the background of img. It waits for a free session while ctx
// allows; a context cancelled during inference terminates the run. The
// result has img's size, with its bounds starting at (0, 0).
func (e *Engine) Run(ctx context.Context, img image.Image) (image.Image, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := img.Bounds()
	if b.Empty() {
		return nil, errors.New("bgremove: empty image")
	}
	src := toNRGBA(img)
	var w *worker
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-e.done:
		return nil, ErrClosed
	case w = <-e.workers:
	}
	defer func() { e.workers <- w }()

	fillInput(w.input.GetData(), src)
	if err := w.infer(ctx); err != nil {
		return nil, err
	}
	applyMask(src, w.output.GetData())
	return src, nil
}

// infer runs the session; a goroutine watches ctx and terminates the run
// when it is cancelled, and exits when the run returns.
func (w *worker) infer(ctx context.Context) error {
	finished := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
			_ = w.run.Terminate()
		case <-finished:
		}
	}()
	err := w.session.RunWithOptions(w.run)
	close(finished)
	<-watched
	if ctx.Err() != nil {
		_ = w.run.UnsetTerminate()
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("run isnet: %w", err)
	}
	return nil
}

// Close releases the sessions once every Run in progress has given its
// session back. Later Runs return ErrClosed.
func (e *Engine) Close() error {
	e.close.Do(func() {
		close(e.done)
		for range e.all {
			<-e.workers
		}
		e.destroy()
	})
	return nil
}

func (e *Engine) destroy() {
	for _, w := range e.all {
		w.destroy()
	}
	e.all = nil
}

// toNRGBA copies img into a new *image.NRGBA whose bounds start at (0, 0).
func toNRGBA(img image.Image) *image.NRGBA {
	b := img.Bounds()
	dst := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(dst, dst.Bounds(), img, b.Min, draw.Src)
	return dst
}
