// Package runner runs the image operations: a bounded pool of workers
// takes the operations still to finish (queued or processing in the read
// model, which the log alone decides), records each attempt, runs the
// operation's engine on the stored input, stores the result and records
// the outcome, which settles the operation's credits (consumed on
// success, released on failure).
//
// An attempt cut short by a shutdown records nothing more: the operation
// stays processing and the next start runs it again. An operation whose
// attempts all ended without an outcome (a process killed while running
// it, MaxAttempts times) fails with attempts_exhausted, so a picture that
// crashes the process cannot do so forever.
//
// It imports domain, images/engine and images/store.
package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/rs/zerolog"
	_ "golang.org/x/image/webp" // decodes WebP inputs

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/images/engine"
	"github.com/cgp-platform/cgp/images/store"
)

// Defaults.
const (
	DefaultWorkers = 2
	MaxAttempts    = 3
	DefaultTimeout = 10 * time.Minute
	// DefaultPoll is how often the queue is read when nothing woke the
	// workers (a request recorded by another process).
	DefaultPoll = 5 * time.Second
	// JPEGQuality is the quality of JPEG results (upscales of JPEG
	// pictures; every other result is PNG).
	JPEGQuality = 92
)

// ErrUnavailable is returned by an engine that cannot run on this server
// (its model files are missing); the operation fails with
// engine_unavailable and its credits are released.
var ErrUnavailable = errors.New("the engine is not available on this server")

// Job is an operation still to finish.
type Job struct {
	ID, ShopID, Kind, Month string
	Options                 map[string]string
	Input                   domain.ImageRef
}

// Outcome is a finished operation's result.
type Outcome struct {
	Engine    string
	Result    domain.ImageRef
	Metadata  map[string]string
	RunMillis int64
}

// Queue lists the operations still to finish, oldest first, except those
// in skip.
type Queue interface {
	Pending(ctx context.Context, limit int, skip map[string]bool) ([]Job, error)
}

// Recorder records an operation's attempts and outcome (the commands).
type Recorder interface {
	// Attempts counts the attempts recorded.
	Attempts(ctx context.Context, job Job) (int, error)
	// Start records an attempt with engine.
	Start(ctx context.Context, job Job, engine string) error
	// Succeed records the result and consumes the credits; Fail records
	// the failure and releases the credits. Each returns the log position
	// of what it appended (0 when the outcome was recorded before).
	Succeed(ctx context.Context, job Job, out Outcome) (uint64, error)
	Fail(ctx context.Context, job Job, code, reason string) (uint64, error)
}

// Config configures a Runner.
type Config struct {
	Queue    Queue
	Recorder Recorder
	Store    store.Store
	// Engines by operation kind (domain.CreditKind…). A kind without an
	// engine fails with engine_unavailable.
	Engines map[string]engine.Engine
	// Settled waits until the queue shows what the log holds up to a
	// position: a worker keeps an operation until the queue shows its
	// outcome, so that it never takes it up again (nil: no wait).
	Settled func(ctx context.Context, position uint64) error
	Workers int
	// Timeout bounds one attempt.
	Timeout time.Duration
	Poll    time.Duration
	Logger  zerolog.Logger
	Now     func() time.Time
}

// Runner is the pool of workers.
type Runner struct {
	cfg  Config
	wake chan struct{}
}

// New returns a runner.
func New(cfg Config) *Runner {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Runner{cfg: cfg, wake: make(chan struct{}, 1)}
}

// InputKey and ResultKey are an operation's blobs in the store.
func InputKey(id string) string  { return id + "-input" }
func ResultKey(id string) string { return id + "-result" }

// Wake tells the workers to read the queue now.
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run runs the workers until ctx ends, then waits for the attempts in
// flight to stop (they stop promptly: engines watch ctx).
func (r *Runner) Run(ctx context.Context) error {
	var (
		mu       sync.Mutex
		inFlight = map[string]bool{}
		wg       sync.WaitGroup
		done     = make(chan struct{}, r.cfg.Workers)
	)
	defer wg.Wait()
	tick := time.NewTicker(r.cfg.Poll)
	defer tick.Stop()
	for {
		mu.Lock()
		free := r.cfg.Workers - len(inFlight)
		skip := maps.Clone(inFlight)
		mu.Unlock()
		if free > 0 {
			jobs, err := r.cfg.Queue.Pending(ctx, free, skip)
			if err != nil && ctx.Err() == nil {
				r.cfg.Logger.Error().Err(err).Msg("image operations: reading the queue failed")
			}
			for _, j := range jobs {
				mu.Lock()
				inFlight[j.ID] = true
				mu.Unlock()
				wg.Add(1)
				go func(j Job) {
					defer wg.Done()
					r.attempt(ctx, j)
					mu.Lock()
					delete(inFlight, j.ID)
					mu.Unlock()
					done <- struct{}{}
				}(j)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		case <-done:
		case <-tick.C:
		}
	}
}

// attempt runs one attempt of job and records its outcome; errors of the
// recording are logged and the job stays pending for the next pass.
func (r *Runner) attempt(ctx context.Context, j Job) {
	log := r.cfg.Logger.With().Str("operation_id", j.ID).Str("shop_id", j.ShopID).Str("kind", j.Kind).Logger()
	if err := r.run(ctx, j, log); err != nil && ctx.Err() == nil {
		log.Error().Err(err).Msg("image operation: recording the attempt failed; it is tried again")
	}
}

// failure is an attempt's end without a result.
type failure struct{ code, reason string }

func (f *failure) Error() string { return f.code + ": " + f.reason }

func (r *Runner) run(ctx context.Context, j Job, log zerolog.Logger) error {
	eng := r.cfg.Engines[j.Kind]
	name := "none"
	if eng != nil {
		name = eng.Name()
	}
	n, err := r.cfg.Recorder.Attempts(ctx, j)
	if err != nil {
		return err
	}
	if n >= MaxAttempts {
		pos, err := r.cfg.Recorder.Fail(ctx, j, domain.ImageFailAttempts,
			fmt.Sprintf("%d attempts ended without an outcome", n))
		return r.settled(ctx, pos, err, log)
	}
	if err := r.cfg.Recorder.Start(ctx, j, name); err != nil {
		return err
	}
	began := r.cfg.Now()
	out, err := r.execute(ctx, j, eng)
	if err != nil {
		if ctx.Err() != nil {
			return nil // shutting down: the next start runs it again
		}
		var f *failure
		if !errors.As(err, &f) {
			log.Error().Err(err).Msg("image operation failed")
			f = &failure{code: domain.ImageFailEngine, reason: "the engine failed to process the picture"}
		}
		pos, err := r.cfg.Recorder.Fail(ctx, j, f.code, f.reason)
		return r.settled(ctx, pos, err, log)
	}
	out.RunMillis = r.cfg.Now().Sub(began).Milliseconds()
	pos, err := r.cfg.Recorder.Succeed(ctx, j, out)
	if err != nil {
		return err
	}
	if err := r.cfg.Store.Delete(ctx, j.ShopID, InputKey(j.ID)); err != nil {
		log.Warn().Err(err).Msg("image operation: removing its input failed; the retention sweep will")
	}
	return r.settled(ctx, pos, nil, log)
}

// SettleTimeout bounds a worker's wait for the queue to show an outcome.
const SettleTimeout = time.Minute

// settled waits, after an outcome was recorded at pos, until the queue
// shows it (so the operation is not taken up again); a wait that times out
// is logged, and the second attempt it may cause finds the outcome
// recorded.
func (r *Runner) settled(ctx context.Context, pos uint64, err error, log zerolog.Logger) error {
	if err != nil || pos == 0 || r.cfg.Settled == nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, SettleTimeout)
	defer cancel()
	if err := r.cfg.Settled(wctx, pos); err != nil && ctx.Err() == nil {
		log.Warn().Err(err).Msg("image operation: its outcome is not in the queue's read model yet")
	}
	return nil
}

// execute reads the input, runs the engine and stores the result.
func (r *Runner) execute(ctx context.Context, j Job, eng engine.Engine) (Outcome, error) {
	if eng == nil {
		return Outcome{}, &failure{domain.ImageFailUnavailable, "no engine for " + j.Kind + " runs on this server"}
	}
	rc, err := r.cfg.Store.Get(ctx, j.ShopID, InputKey(j.ID))
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return Outcome{}, &failure{domain.ImageFailInputMissing, "the uploaded picture is no longer stored"}
	}
	if err != nil {
		return Outcome{}, err
	}
	src, format, err := image.Decode(rc)
	rc.Close()
	if err != nil {
		if ctx.Err() != nil {
			return Outcome{}, ctx.Err()
		}
		return Outcome{}, &failure{domain.ImageFailInvalidImage, "the picture could not be decoded as " + j.Input.Format}
	}
	runCtx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	res, err := eng.Run(runCtx, engine.Input{Image: src, Options: j.Options})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return Outcome{}, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return Outcome{}, &failure{domain.ImageFailEngine, fmt.Sprintf("the engine did not finish within %s", r.cfg.Timeout)}
	case errors.Is(err, ErrUnavailable):
		return Outcome{}, &failure{domain.ImageFailUnavailable, err.Error()}
	case domain.ErrorCode(err) == domain.CodeInvalid:
		return Outcome{}, &failure{domain.ImageFailInvalidImage, err.Error()}
	default:
		var pe interface{ ProviderCode() string }
		if errors.As(err, &pe) {
			return Outcome{}, &failure{domain.ImageFailProvider, "the scene provider answered " + pe.ProviderCode()}
		}
		return Outcome{}, err
	}
	var buf bytes.Buffer
	outFormat := "png"
	if format == "jpeg" && j.Kind == domain.CreditKindUpscale {
		outFormat = "jpeg"
		err = jpeg.Encode(&buf, res.Image, &jpeg.Options{Quality: JPEGQuality})
	} else {
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, res.Image)
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("encode result: %w", err)
	}
	b := res.Image.Bounds()
	digest, size, err := r.cfg.Store.Put(ctx, j.ShopID, ResultKey(j.ID), io.Reader(&buf))
	if err != nil {
		return Outcome{}, fmt.Errorf("store result: %w", err)
	}
	return Outcome{Engine: eng.Name(), Metadata: res.Metadata,
		Result: domain.ImageRef{Digest: digest, Size: size, Format: outFormat, Width: b.Dx(), Height: b.Dy()}}, nil
}
