package app

// The image operations (issue 19): their object store, engines, workers,
// routes and retention sweep.

import (
	"context"
	"errors"
	"fmt"
	"image"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/idempotency"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/images/engine"
	"github.com/cgp-platform/cgp/images/engine/bgremove"
	"github.com/cgp-platform/cgp/images/engine/cutout"
	"github.com/cgp-platform/cgp/images/engine/scene"
	"github.com/cgp-platform/cgp/images/engine/upscale"
	"github.com/cgp-platform/cgp/images/input"
	"github.com/cgp-platform/cgp/images/provider/photoroom"
	"github.com/cgp-platform/cgp/images/runner"
	"github.com/cgp-platform/cgp/images/store"
	"github.com/cgp-platform/cgp/images/store/localfs"
	"github.com/cgp-platform/cgp/projections/imageops"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/writeapi"
)

// ImagesDir is the image operations' object store in the data directory.
const ImagesDir = "images"

// ImageRetentionEvery is how often the retention sweep runs.
const ImageRetentionEvery = time.Hour

// Images is the image operations' side of the server.
type Images struct {
	Store   store.Store
	Queries *imageops.Queries
	Runner  *runner.Runner
	// Changed is notified after each committed event of an operation.
	Changed  runner.Signal
	remover  *lazyRemover
	provider bool
	// bgMissing says why background removal cannot run ("" when it can).
	bgMissing string
}

// openImages opens the object store and builds the engines and workers.
func openImages(cfg Config, core *Core, a *App) (*Images, error) {
	root := cfg.ImageDir
	if root == "" {
		root = filepath.Join(cfg.DataDir, ImagesDir)
	}
	st, err := localfs.New(localfs.Config{Root: root})
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	im := &Images{Store: st, Queries: imageops.NewQueries(a.Store.DB())}
	im.bgMissing = bgRemovalMissing(cfg)
	var cut engine.Engine
	if im.bgMissing == "" {
		im.remover = &lazyRemover{cfg: bgremove.Config{LibraryPath: cfg.ONNXRuntimeLib, ModelPath: cfg.BGRemoveModel}}
		cut = cutout.New(im.remover)
	} else {
		core.Logger.Warn().Str("reason", im.bgMissing).Msg("background removal is unavailable on this server")
	}
	var sceneEngine engine.Engine = scene.NewEmbedded(cut)
	if cfg.SceneAPIURL != "" {
		pr, err := photoroom.New(photoroom.Config{BaseURL: cfg.SceneAPIURL, APIKey: cfg.SceneAPIKey, HTTP: cfg.OutboundClient()})
		if err != nil {
			return nil, err
		}
		sceneEngine, im.provider = scene.NewProvider(pr), true
	}
	engines := map[string]engine.Engine{
		domain.CreditKindUpscale:        upscale.New(upscale.Config{}),
		domain.CreditKindLifestyleScene: sceneEngine,
	}
	if cut != nil {
		engines[domain.CreditKindBackgroundRemoval] = cut
	}
	im.Runner = runner.New(runner.Config{Queue: imageQueue{q: im.Queries}, Recorder: imageRecorder{cmds: core.Commands, store: st},
		Store: st, Engines: engines, Workers: cfg.ImageWorkers, Logger: core.Logger,
		Settled: func(ctx context.Context, pos uint64) error {
			return a.Runtime.WaitFor(ctx, eventlog.Position(pos), imageops.Name)
		}})
	return im, nil
}

// bgRemovalMissing says why background removal cannot run here, "" when
// its files are configured and present.
func bgRemovalMissing(cfg Config) string {
	if cfg.ONNXRuntimeLib == "" || cfg.BGRemoveModel == "" {
		return "background removal is not configured on this server (--onnxruntime-lib and --bgremove-model; make models fetches them)"
	}
	for _, p := range []string{cfg.ONNXRuntimeLib, cfg.BGRemoveModel} {
		if _, err := os.Stat(p); err != nil {
			return "background removal is unavailable on this server: its model files are missing (make models fetches them)"
		}
	}
	return ""
}

// changed is the projector's callback: waiters and workers wake.
func (im *Images) changed() {
	im.Changed.Notify()
	im.Runner.Wake()
}

// Close releases the background-removal sessions.
func (im *Images) Close() error {
	if im == nil || im.remover == nil {
		return nil
	}
	return im.remover.Close()
}

// unavailable says why kind cannot run on this server ("" when it can).
func (im *Images) unavailable(kind string) string {
	if kind == domain.CreditKindBackgroundRemoval {
		return im.bgMissing
	}
	return ""
}

// lazyRemover opens the background-removal engine at its first use, so a
// server that removes no background never loads ONNX Runtime.
type lazyRemover struct {
	cfg    bgremove.Config
	mu     sync.Mutex
	engine *bgremove.Engine
	closed bool
}

func (l *lazyRemover) get() (*bgremove.Engine, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, bgremove.ErrClosed
	}
	if l.engine == nil {
		e, err := bgremove.New(l.cfg)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", runner.ErrUnavailable, err)
		}
		l.engine = e
	}
	return l.engine, nil
}

// Run implements cutout.Remover.
func (l *lazyRemover) Run(ctx context.Context, img image.Image) (image.Image, error) {
	e, err := l.get()
	if err != nil {
		return nil, err
	}
	return e.Run(ctx, img)
}

// Close closes the engine if it was opened.
func (l *lazyRemover) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.engine == nil {
		return nil
	}
	return l.engine.Close()
}

// imageQueue is the workers' queue: the read model's pending operations.
type imageQueue struct{ q *imageops.Queries }

func (iq imageQueue) Pending(ctx context.Context, limit int, skip map[string]bool) ([]runner.Job, error) {
	ops, err := iq.q.Pending(ctx, limit, skip)
	jobs := make([]runner.Job, len(ops))
	for i, o := range ops {
		jobs[i] = runner.Job{ID: o.ID, ShopID: o.ShopID, Kind: o.Kind, Month: o.Month, Options: o.Options, Input: o.Input}
	}
	return jobs, err
}

// imageRecorder records the workers' attempts and outcomes with the
// commands (system actor, the operation's id as correlation id). An
// operation whose shop was erased meanwhile cannot be recorded: its blobs
// go and nothing more is tried.
type imageRecorder struct {
	cmds  *commands.Handler
	store store.Store
}

func imageMeta(j runner.Job) commands.Meta {
	return commands.Meta{RequestID: j.ID, Actor: "system:image_operations", Source: "system"}
}

func (ir imageRecorder) Attempts(ctx context.Context, j runner.Job) (int, error) {
	return ir.cmds.ImageAttempts(ctx, j.ID)
}

func (ir imageRecorder) Start(ctx context.Context, j runner.Job, engineName string) error {
	_, _, err := ir.cmds.StartImageOperation(ctx, commands.StartImageOperation{ShopID: j.ShopID, OperationID: j.ID, Engine: engineName},
		imageMeta(j))
	return err
}

func (ir imageRecorder) Succeed(ctx context.Context, j runner.Job, out runner.Outcome) (uint64, error) {
	res, _, err := ir.cmds.SucceedImageOperation(ctx, commands.SucceedImageOperation{Success: domain.ImageOperationSucceeded{
		ShopID: j.ShopID, OperationID: j.ID, Month: j.Month, Engine: out.Engine, Result: out.Result, Metadata: out.Metadata,
		RunMillis: out.RunMillis}}, imageMeta(j))
	return res.Position, ir.settled(ctx, j, err)
}

func (ir imageRecorder) Fail(ctx context.Context, j runner.Job, code, reason string) (uint64, error) {
	res, _, err := ir.cmds.FailImageOperation(ctx, commands.FailImageOperation{Failure: domain.ImageOperationFailed{
		ShopID: j.ShopID, OperationID: j.ID, Month: j.Month, Code: code, Reason: reason}}, imageMeta(j))
	return res.Position, ir.settled(ctx, j, err)
}

// settled handles an outcome's recording: an operation settled the other
// way before (conflict) has its outcome, and nothing more is tried; a shop
// erased meanwhile (not found) takes the operation's blobs with it.
func (ir imageRecorder) settled(ctx context.Context, j runner.Job, err error) error {
	switch domain.ErrorCode(err) {
	case domain.CodeConflict:
		return nil
	case domain.CodeNotFound:
		return errors.Join(ir.store.Delete(ctx, j.ShopID, runner.ResultKey(j.ID)), ir.store.Delete(ctx, j.ShopID, runner.InputKey(j.ID)))
	}
	return err
}

// mountImages registers the image operations and their reads.
func mountImages(a *App, r *mux.Router, _ Middleware) {
	keys := ImageKeys{Q: a.Tenancy}
	// Idempotency-Key on the operations, per image-API key: a retried
	// upload is answered the first operation instead of running (and
	// charging) a second one. The body limit is the picture's, with the
	// multipart form's room.
	idem := idempotency.Middleware(a.Idempotency, func(r *http.Request) (string, bool) {
		k, ok := auth.ImageKeyFromContext(r.Context())
		return "imagekey:" + k.KeyID, ok
	}, idempotency.Options{MaxRequestBytes: input.DefaultMaxBytes + input.MultipartOverhead,
		ReplayHeaders: append(idempotency.DefaultReplayHeaders(), writeapi.HeaderCreditsCharged, writeapi.HeaderCreditsRemaining,
			"Preference-Applied")})
	writeapi.NewImages(writeapi.ImagesConfig{Commands: a.Commands, Auth: a.Auth, Keys: keys, Idempotency: idem, Queries: a.Images.Queries,
		Store: a.Images.Store, Input: input.Config{}, Provider: a.Images.provider, Unavailable: a.Images.unavailable,
		Wake: a.Images.Runner.Wake, Changed: &a.Images.Changed}).Routes(r)
	readapi.NewImages(a.Images.Queries, a.Auth, keys, a.Images.Store, a.cursors, a.Runtime).Routes(r)
}

// imageWorkersJob runs the image operations.
func imageWorkersJob(a *App) func(ctx context.Context) error { return a.Images.Runner.Run }

// imageRetentionJob removes results older than the retention.
func imageRetentionJob(a *App) func(ctx context.Context) error {
	keep := a.Config.ImageRetention
	if keep <= 0 {
		keep = store.DefaultRetention
	}
	return func(ctx context.Context) error {
		tick := time.NewTicker(ImageRetentionEvery)
		defer tick.Stop()
		for {
			n, err := a.Images.Store.Sweep(ctx, time.Now().Add(-keep))
			switch {
			case err != nil && ctx.Err() == nil:
				a.Logger.Warn().Err(err).Msg("image retention sweep")
			case n > 0:
				a.Logger.Info().Int("removed", n).Msg("image retention sweep")
			}
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
	}
}
