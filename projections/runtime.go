package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/eventbus"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/readmodel"
)

// ErrClosed is returned by Run and WaitFor once the runtime is closed.
var ErrClosed = errors.New("projection runtime closed")

// ErrUnknownProjector is matched by WaitFor given a name never registered.
var ErrUnknownProjector = errors.New("unknown projector")

// Config configures a Runtime.
type Config struct {
	// Log is the event log followed. Required; not closed by the runtime.
	Log eventlog.Log
	// Store keeps read models and checkpoints. Required; not closed by
	// the runtime.
	Store readmodel.Store
	// Logger receives failures, retries and parked events: positions,
	// event ids and types, never payloads. The zero value discards.
	Logger zerolog.Logger
	// Registry receives the projection metrics. Nil keeps them in a
	// private registry (not exported). A second runtime of the process
	// registers through prometheus.WrapRegistererWithPrefix, so that the
	// names differ.
	Registry prometheus.Registerer
	// MaxRetries is how many times a failing event is retried before it
	// is parked. Default 5.
	MaxRetries int
	// RetryInitialInterval is the first pause between retries; it doubles
	// up to RetryMaxInterval. Defaults 100 ms and 5 s.
	RetryInitialInterval time.Duration
	RetryMaxInterval     time.Duration
	// HandleTimeout bounds one call of Handle: its ctx ends then and the
	// attempt fails (it is retried, then parked). Projectors may share the
	// store's single writer, so a handler that hangs would hold back all
	// of them. Default 30 s.
	HandleTimeout time.Duration
	// Unbounded, when true, runs Handle with neither deadline nor
	// cancellation (HandleTimeout is ignored): for a replay, which nothing
	// else waits on. The SQLite driver then runs each statement on the
	// calling goroutine instead of watching a cancellable context from a
	// goroutine of its own per statement.
	Unbounded bool
	// RedeliveryBackoff is the pause before an event is delivered again
	// when even parking it failed (the store is down). Default 1 s.
	RedeliveryBackoff time.Duration
	// CloseTimeout bounds how long Close waits for events being handled.
	// Default 30 s.
	CloseTimeout time.Duration
	// Batch is the most events a projector applies in one store
	// transaction (events already waiting, never waiting for more).
	// Default DefaultBatch; 1 applies one event per transaction.
	Batch int
	// FlushInterval is how often checkpoints moved past events a
	// projector does not fold (Projector.Types) are written to the store.
	// Default 250 ms.
	FlushInterval time.Duration
	// Now is the clock of the delay metric and of projectors' Upkeep.
	// Default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 5
	}
	if c.RetryInitialInterval == 0 {
		c.RetryInitialInterval = 100 * time.Millisecond
	}
	if c.RetryMaxInterval == 0 {
		c.RetryMaxInterval = 5 * time.Second
	}
	if c.HandleTimeout == 0 {
		c.HandleTimeout = 30 * time.Second
	}
	if c.RedeliveryBackoff == 0 {
		c.RedeliveryBackoff = time.Second
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = 30 * time.Second
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = 250 * time.Millisecond
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, errors.New("projections: Log is required"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("projections: Store is required"))
	}
	if c.MaxRetries < 0 {
		errs = append(errs, errors.New("projections: MaxRetries must not be negative"))
	}
	for name, d := range map[string]time.Duration{
		"RetryInitialInterval": c.RetryInitialInterval, "RetryMaxInterval": c.RetryMaxInterval,
		"HandleTimeout": c.HandleTimeout, "RedeliveryBackoff": c.RedeliveryBackoff, "CloseTimeout": c.CloseTimeout,
		"FlushInterval": c.FlushInterval,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("projections: %s must not be negative", name))
		}
	}
	if c.RetryMaxInterval > 0 && c.RetryMaxInterval < c.RetryInitialInterval {
		errs = append(errs, errors.New("projections: RetryMaxInterval must not be below RetryInitialInterval"))
	}
	return errors.Join(errs...)
}

// DefaultBatch is the default Config.Batch: large enough to make catching
// up ten times faster than one event per transaction, small enough that a
// batch's transaction does not hold up live acknowledgements on a busy
// machine (see docs/performance.md).
const DefaultBatch = 16

// Runtime runs projectors: one watermill handler per projector, each with
// its own subscription to the whole log starting after that projector's
// checkpoint, so that a slow or failing projector holds back no other.
//
// An event's handling runs inside Store.Apply with the event's position, so
// rows and checkpoint move together and redelivery is harmless. A panic
// becomes an error; an error is retried with exponential backoff
// MaxRetries times; then, if Handle failed or panicked, the event is parked
// (Store.Park records it and moves the checkpoint past it) and the
// projector goes on. If the store failed instead, the event is delivered
// again after RedeliveryBackoff until the store recovers: that projector
// waits, since the event itself is fine.
//
// Register every projector, then Run. Run, Close, WaitFor and Checkpoints
// are safe for concurrent use.
type Runtime struct {
	cfg     Config
	metrics *metrics
	log     zerolog.Logger

	mu         sync.Mutex
	projectors map[string]*projector
	order      []string // registration order
	started    bool     // Run was called: no more Register
	active     bool     // a Run is under way
	closed     bool
	stopRouter context.CancelFunc // stops the running router
	closeErr   error              // the router's close failed (timeout)
	changed    chan struct{}      // closed and replaced when a checkpoint moves
	done       chan struct{}      // closed by Close
	running    chan struct{}      // closed once every projector follows the log
	runOnce    sync.Once          // closes running
	runDone    chan struct{}      // closed when the latest Run returns
	reload     *reloadRequest
	reloadWake chan struct{} // closed by Reload, replaced when Run takes it
}

// reloadRequest is a Reload waiting for Run to pause.
type reloadRequest struct {
	fn   func(context.Context) error
	done chan error
}

type projector struct {
	Projector
	checkpoint eventlog.Position
	known      bool // checkpoint read from the store
	types      map[string]bool
	persisted  eventlog.Position // the checkpoint last written to the store
}

// folds reports whether the projector's Handle folds events of type t.
func (p *projector) folds(t string) bool { return p.types == nil || p.types[t] }

// New returns a runtime with no projectors and registers its metrics.
func New(cfg Config) (*Runtime, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new projection runtime: %w", err)
	}
	r := &Runtime{
		cfg:        cfg,
		log:        cfg.Logger.With().Str("component", "projections").Logger(),
		projectors: make(map[string]*projector),
		changed:    make(chan struct{}),
		done:       make(chan struct{}),
		running:    make(chan struct{}),
		runDone:    make(chan struct{}),
		reloadWake: make(chan struct{}),
	}
	r.metrics = newMetrics(r)
	if err := r.metrics.register(cfg.Registry); err != nil {
		return nil, fmt.Errorf("new projection runtime: %w", err)
	}
	return r, nil
}

// Register adds a projector. It fails when the projector is invalid, its
// name is taken, or Run has started.
func (r *Runtime) Register(p Projector) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("register: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.closed {
		return fmt.Errorf("register %s: the runtime has already started", p.Name)
	}
	if _, dup := r.projectors[p.Name]; dup {
		return fmt.Errorf("register %s: name already registered", p.Name)
	}
	pr := &projector{Projector: p}
	if p.Types != nil {
		pr.types = make(map[string]bool, len(p.Types))
		for _, t := range p.Types {
			pr.types[t] = true
		}
	}
	r.projectors[p.Name] = pr
	r.order = append(r.order, p.Name)
	return nil
}

// Running is closed once every projector follows the log (after its
// migrations ran and its subscription started).
func (r *Runtime) Running() <-chan struct{} { return r.running }

// Run migrates every projector's tables, then projects until ctx ends or
// Close is called, and returns nil then. It returns an error when a
// migration fails or a subscription cannot start. Once it returned (and
// until Close) it may be called again, and resumes from the checkpoints in
// the store: a job that stops and starts again, such as one that runs
// only while its server holds a lease. When Run returns, every goroutine
// it started has exited.
func (r *Runtime) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	if r.active {
		r.mu.Unlock()
		return errors.New("projection runtime: Run called while a Run is under way")
	}
	r.started, r.active = true, true
	runDone := make(chan struct{})
	r.runDone = runDone
	projs := make([]*projector, 0, len(r.order))
	for _, name := range r.order {
		projs = append(projs, r.projectors[name])
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.active = false
		close(runDone)
		r.mu.Unlock()
	}()

	if err := r.load(ctx, projs); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return fmt.Errorf("run projections: %w", err)
	}
	for {
		err := r.follow(ctx, projs)
		r.mu.Lock()
		req := r.reload
		if req != nil {
			r.reload = nil
			r.reloadWake = make(chan struct{})
		}
		r.mu.Unlock()
		if req == nil {
			return err
		}
		if ferr := req.fn(ctx); ferr != nil {
			req.done <- ferr // the store is as it was: go on
			continue
		}
		// The store may hold other read models now: every checkpoint is
		// read again, backwards too.
		lerr := r.load(ctx, projs)
		req.done <- lerr
		if lerr != nil {
			return fmt.Errorf("run projections: after reload: %w", lerr)
		}
	}
}

// load migrates every projector's tables and reads its checkpoint from the
// store, replacing what the runtime knew.
func (r *Runtime) load(ctx context.Context, projs []*projector) error {
	for _, p := range projs {
		if err := r.cfg.Store.Migrate(ctx, p.Name, p.Migrations); err != nil {
			return err
		}
		// Read every checkpoint before the router starts: a failure
		// inside the router's start would leave it waiting CloseTimeout.
		cp, err := r.cfg.Store.Checkpoint(ctx, p.Name)
		if err != nil {
			return err
		}
		r.mu.Lock()
		p.known = true
		p.persisted = cp
		if cp != p.checkpoint {
			p.checkpoint = cp
			close(r.changed)
			r.changed = make(chan struct{})
		}
		r.mu.Unlock()
	}
	return nil
}

// follow runs one router over every projector's subscription until ctx
// ends, the runtime closes or a Reload pauses it.
func (r *Runtime) follow(ctx context.Context, projs []*projector) error {
	if len(projs) == 0 {
		r.runOnce.Do(func() { close(r.running) })
		r.mu.Lock()
		reload := r.reloadWake
		r.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-r.done:
		case <-reload:
		}
		return nil
	}
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: r.cfg.CloseTimeout}, eventbus.NewLogger(r.log))
	if err != nil {
		return fmt.Errorf("run projections: %w", err)
	}
	subs := make([]*eventbus.Subscriber, 0, len(projs))
	defer func() {
		// The router stops its handlers; closing the subscribers too
		// waits for their goroutines.
		for _, s := range subs {
			_ = s.Close()
		}
	}()
	for _, p := range projs {
		sub, err := eventbus.NewSubscriber(eventbus.SubscriberConfig{
			Log:         r.cfg.Log,
			Consumer:    p.Name,
			StartAfter:  r.startAfter,
			NackBackoff: r.cfg.RedeliveryBackoff,
			Raw:         true,
			Wants:       p.folds,
			// Nothing to write for a type the projector does not fold:
			// the checkpoint moves in memory (WaitFor sees it) and
			// reaches the store with the next applied event or the
			// background flush.
			Passed: func(pos eventlog.Position) { r.advance(p, pos) },
			Types:  p.Types,
			Batch:  r.cfg.Batch,
			Logger: r.log.With().Str("projector", p.Name).Logger(),
		})
		if err != nil {
			return fmt.Errorf("run projections: %w", err)
		}
		subs = append(subs, sub)
		h := router.AddConsumerHandler(p.Name, eventbus.TopicAll, sub, r.handler(p))
		h.AddMiddleware(
			r.park(p),
			middleware.Retry{
				MaxRetries:      r.cfg.MaxRetries,
				InitialInterval: r.cfg.RetryInitialInterval,
				MaxInterval:     r.cfg.RetryMaxInterval,
				Multiplier:      2,
				Logger:          eventbus.NewLogger(r.log.With().Str("projector", p.Name).Logger()),
			}.Middleware,
			middleware.Recoverer,
		)
	}

	// Close and Reload stop the router by cancelling rctx: closing a
	// router that has not started running would wait for handlers that
	// never start.
	rctx, stopRouter := context.WithCancel(ctx)
	defer stopRouter()
	r.mu.Lock()
	if r.closed || r.reload != nil {
		r.mu.Unlock()
		return nil
	}
	r.stopRouter = stopRouter
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.stopRouter = nil
		r.mu.Unlock()
	}()

	// Reports readiness, and closes the router once it runs and rctx
	// ended (waiting up to CloseTimeout for the events being handled);
	// exits when Run returns.
	exited := make(chan struct{})
	closed := make(chan error, 1)
	defer close(exited)
	go func() {
		select {
		case <-router.Running():
			r.runOnce.Do(func() { close(r.running) })
		case <-exited:
			return
		}
		select {
		case <-rctx.Done():
			closed <- router.Close()
		case <-exited:
		}
	}()
	flushDone := make(chan struct{})
	var background sync.WaitGroup
	background.Go(func() { r.flushCheckpoints(flushDone) })
	for _, p := range projs {
		if p.Upkeep != nil {
			background.Go(func() { r.upkeep(p, flushDone) })
		}
	}
	err = router.Run(rctx)
	close(flushDone)
	background.Wait()
	if err != nil {
		if rctx.Err() != nil {
			// Stopped while the handlers started: a subscription refused
			// the ended context. Closing the router now would wait
			// CloseTimeout for the handlers that never started; those
			// that did end with rctx, and their subscribers are closed.
			return nil
		}
		_ = router.Close()
		return fmt.Errorf("run projections: %w", err)
	}
	select {
	case cerr := <-closed:
		if cerr != nil {
			r.mu.Lock()
			r.closeErr = errors.Join(r.closeErr, cerr)
			r.mu.Unlock()
		}
	default:
	}
	return nil
}

// Reload pauses the running projectors, runs fn (which may move the store
// to other read models: readmodel/sqlite's Store.Switch), reads every
// checkpoint from the store again and resumes each projector from it. It
// returns fn's error, and projecting goes on from where it was: fn must
// leave the store as it found it when it fails. When the store cannot be
// read after a successful fn, Run stops with that error. While no Run is
// under way, fn runs at once (the next Run reads every checkpoint). Queries
// keep being
// answered during a reload: only projecting pauses.
func (r *Runtime) Reload(ctx context.Context, fn func(context.Context) error) error {
	req := &reloadRequest{fn: fn, done: make(chan error, 1)}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	if !r.active {
		r.mu.Unlock()
		return fn(ctx)
	}
	if r.reload != nil {
		r.mu.Unlock()
		return errors.New("projection runtime: a reload is already under way")
	}
	r.reload = req
	stop, wake, runDone := r.stopRouter, r.reloadWake, r.runDone
	r.mu.Unlock()
	close(wake)
	if stop != nil {
		// Stops the handlers (up to CloseTimeout for those running);
		// follow returns and Run serves the request.
		stop()
	}
	select {
	case err := <-req.done:
		return err
	case <-runDone:
		// Run returned without serving the request: it is withdrawn, so
		// that the next Run does not serve it.
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.reload == req {
			r.reload = nil
			r.reloadWake = make(chan struct{})
		}
		select {
		case err := <-req.done:
			return err
		default:
		}
		if r.closed {
			return ErrClosed
		}
		return errors.New("reload: the projection runtime stopped")
	case <-ctx.Done():
		return fmt.Errorf("reload: %w", ctx.Err())
	}
}

// Close stops the runtime: it stops every projector, waiting up to
// CloseTimeout for events being handled, and waits for Run to return.
// Events not yet applied are delivered again on the next Run.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.done)
	stop, active, runDone := r.stopRouter, r.active, r.runDone
	r.mu.Unlock()

	if stop != nil {
		stop()
	}
	if active {
		<-runDone
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closeErr != nil {
		return fmt.Errorf("close projection runtime: %w", r.closeErr)
	}
	return nil
}

// startAfter is the subscriptions' start position: the checkpoint Run
// read from the store (the runtime's own writes only move it forward).
func (r *Runtime) startAfter(_ context.Context, name string) (eventlog.Position, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.projectors[name]
	if !ok || !p.known {
		return 0, fmt.Errorf("start of %s: checkpoint not loaded", name)
	}
	return p.checkpoint, nil
}

// handler applies one event inside the store transaction that moves the
// checkpoint, within HandleTimeout.
func (r *Runtime) handler(p *projector) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		batch, err := eventbus.EventsFromMessage(msg)
		if err != nil {
			return fmt.Errorf("projector %s: %w", p.Name, err)
		}
		pending := r.pending(p, batch)
		if len(pending) > 1 {
			// The whole batch in one transaction. When one of its events
			// fails nothing of it is written: the events before the
			// failing one are applied again without it, and the failure
			// is returned, so the failing event alone is retried (once per
			// attempt) and parked, and the rest follows it.
			err := r.apply(msg.Context(), p, pending)
			if err == nil || !parkable(err) {
				return err
			}
			var he *handlerError
			if errors.As(err, &he) && he.position != 0 {
				var before []eventlog.Event
				for _, e := range pending {
					if e.Position >= he.position {
						break
					}
					before = append(before, e)
				}
				if len(before) > 0 {
					if berr := r.apply(msg.Context(), p, before); berr != nil {
						return berr
					}
				}
				return err
			}
		}
		for _, e := range r.pending(p, batch) {
			if err := r.apply(msg.Context(), p, []eventlog.Event{e}); err != nil {
				return err
			}
		}
		return nil
	}
}

// pending returns the events of batch past the projector's checkpoint.
func (r *Runtime) pending(p *projector, batch []eventlog.Event) []eventlog.Event {
	r.mu.Lock()
	cp := p.checkpoint
	r.mu.Unlock()
	for i, e := range batch {
		if e.Position > cp {
			return batch[i:]
		}
	}
	return nil
}

// apply folds events (consecutive, past the checkpoint) inside one store
// transaction that moves the checkpoint to the last of them, each Handle
// within HandleTimeout, then tells Committed, the metrics and WaitFor.
func (r *Runtime) apply(ctx context.Context, p *projector, events []eventlog.Event) error {
	last := events[len(events)-1].Position
	applied, err := r.cfg.Store.Apply(ctx, p.Name, last, func(tx *sql.Tx) error {
		if p.HandleBatch != nil {
			var err error
			if r.cfg.Unbounded {
				err = handleBatch(context.WithoutCancel(ctx), p, tx, events)
			} else {
				hctx, cancel := context.WithTimeout(ctx, r.cfg.HandleTimeout)
				err = handleBatch(hctx, p, tx, events)
				cancel()
			}
			if err != nil {
				// Which event of several failed is not known: the handler
				// applies them again one by one (position 0).
				he := &handlerError{err: err}
				if len(events) == 1 {
					he.position = events[0].Position
				}
				return he
			}
			return nil
		}
		for _, e := range events {
			// The timeout starts once the store's writer is ours, so
			// waiting behind another projector never counts.
			var err error
			if r.cfg.Unbounded {
				err = handle(context.WithoutCancel(ctx), p, tx, e)
			} else {
				hctx, cancel := context.WithTimeout(ctx, r.cfg.HandleTimeout)
				err = handle(hctx, p, tx, e)
				cancel()
			}
			if err != nil {
				return &handlerError{err: err, position: e.Position}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if applied {
		now := r.cfg.Now()
		for _, e := range events {
			if p.Committed != nil {
				p.Committed(e)
			}
			if !e.RecordedAt.IsZero() {
				r.metrics.delay.WithLabelValues(p.Name).Observe(now.Sub(e.RecordedAt).Seconds())
			}
		}
		r.metrics.projected.WithLabelValues(p.Name).Add(float64(len(events)))
	}
	r.mu.Lock()
	if last > p.persisted {
		p.persisted = last
	}
	r.advanceLocked(p, last)
	r.mu.Unlock()
	return nil
}

// flushCheckpoints writes to the store the checkpoints that moved past
// events a projector does not fold, every FlushInterval until done closes,
// and once more then; so a restart does not pass over them again.
func (r *Runtime) flushCheckpoints(done <-chan struct{}) {
	t := time.NewTicker(r.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			r.flushOnce()
			return
		case <-t.C:
			r.flushOnce()
		}
	}
}

// upkeep runs p.Upkeep now and every p.UpkeepEvery until done closes.
func (r *Runtime) upkeep(p *projector, done <-chan struct{}) {
	every := p.UpkeepEvery
	if every <= 0 {
		every = DefaultUpkeepEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	// A stop does not wait for an upkeep: it is cancelled, rolled back,
	// and done again at the next start.
	base, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		select {
		case <-done:
			stop()
		case <-base.Done():
		}
	}()
	for {
		ctx, cancel := context.WithTimeout(base, r.cfg.HandleTimeout)
		now := r.cfg.Now()
		err := r.cfg.Store.Maintain(ctx, func(tx *sql.Tx) error { return p.Upkeep(ctx, tx, now) })
		cancel()
		if err != nil && base.Err() == nil {
			r.log.Warn().Err(err).Str("projector", p.Name).Msg("projector upkeep")
		}
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

func (r *Runtime) flushOnce() {
	type lag struct {
		p   *projector
		pos eventlog.Position
	}
	var lags []lag
	r.mu.Lock()
	for _, p := range r.projectors {
		if p.known && p.checkpoint > p.persisted {
			lags = append(lags, lag{p, p.checkpoint})
		}
	}
	r.mu.Unlock()
	for _, l := range lags {
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.HandleTimeout)
		// Every event up to l.pos is folded or passed over, so the store may
		// record it; Apply never moves a checkpoint backwards.
		_, err := r.cfg.Store.Apply(ctx, l.p.Name, l.pos, func(*sql.Tx) error { return nil })
		cancel()
		if err != nil {
			r.log.Warn().Err(err).Str("projector", l.p.Name).Msg("saving checkpoint")
			continue
		}
		r.mu.Lock()
		if l.pos > l.p.persisted {
			l.p.persisted = l.pos
		}
		r.mu.Unlock()
	}
}

// handle runs p.Handle for e, turning a panic into an error (so the event
// that panicked is known, also inside a batch).
func handle(ctx context.Context, p *projector, tx *sql.Tx, e eventlog.Event) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	return p.Handle(ctx, tx, e)
}

// handleBatch runs p.HandleBatch for events, turning a panic into an error.
func handleBatch(ctx context.Context, p *projector, tx *sql.Tx, events []eventlog.Event) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	return p.HandleBatch(ctx, tx, events)
}

// handlerError marks a failure of the projector's own Handle, as opposed to
// a failure of the store: only the former (and panics) park an event.
type handlerError struct {
	err      error
	position eventlog.Position // the event that failed
}

func (e *handlerError) Error() string { return e.err.Error() }
func (e *handlerError) Unwrap() error { return e.err }

// parkable reports whether err is the event's fault (the handler failed or
// panicked) rather than the store's.
func parkable(err error) bool {
	var he *handlerError
	var pe middleware.RecoveredPanicError
	return errors.As(err, &he) || errors.As(err, &pe)
}

// park is the outermost middleware: when the retries are spent on a
// handler failure or panic it parks the event and acknowledges it. Other
// failures (the store is unavailable) and failures during shutdown (the
// delivery's context ended) are passed on, so the event is delivered again
// after RedeliveryBackoff: parking it would skip an event that is fine.
func (r *Runtime) park(p *projector) message.HandlerMiddleware {
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			ctx := msg.Context() // the delivery's: it ends on shutdown only
			for {
				out, err := h(msg)
				if err == nil {
					return out, nil
				}
				if ctx.Err() != nil || !parkable(err) {
					return nil, err
				}
				e, ok := r.failing(p, msg, err)
				if !ok {
					return nil, err
				}
				if perr := r.cfg.Store.Park(ctx, p.Name, e, err); perr != nil {
					return nil, errors.Join(err, perr)
				}
				r.metrics.parked.WithLabelValues(p.Name).Inc()
				r.log.Error().Err(err).
					Str("projector", p.Name).
					Uint64("position", e.Position).
					Str("event_id", e.ID.String()).
					Str("event_type", e.Type).
					Str("stream", e.StreamID).
					Msg("event parked after retries")
				r.mu.Lock()
				if e.Position > p.persisted {
					p.persisted = e.Position
				}
				r.advanceLocked(p, e.Position)
				r.mu.Unlock()
				// The rest of the message's batch, if any, goes on.
			}
		}
	}
}

// failing returns the event of msg that failed with err: the one the
// handler named, else (a panic) the first past the checkpoint, where the
// one-by-one pass stopped.
func (r *Runtime) failing(p *projector, msg *message.Message, err error) (eventlog.Event, bool) {
	batch, derr := eventbus.EventsFromMessage(msg)
	if derr != nil {
		return eventlog.Event{}, false
	}
	var he *handlerError
	if errors.As(err, &he) && he.position != 0 {
		for _, e := range batch {
			if e.Position == he.position {
				return e, true
			}
		}
	}
	pending := r.pending(p, batch)
	if len(pending) == 0 {
		return eventlog.Event{}, false
	}
	return pending[0], true
}

// advance moves a projector's known checkpoint forward and wakes WaitFor.
func (r *Runtime) advance(p *projector, pos eventlog.Position) {
	r.mu.Lock()
	r.advanceLocked(p, pos)
	r.mu.Unlock()
}

func (r *Runtime) advanceLocked(p *projector, pos eventlog.Position) {
	if pos <= p.checkpoint {
		return
	}
	p.checkpoint = pos
	close(r.changed)
	r.changed = make(chan struct{})
}

// Checkpoints returns the checkpoint of every projector whose subscription
// has started.
func (r *Runtime) Checkpoints() map[string]eventlog.Position {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]eventlog.Position, len(r.projectors))
	for name, p := range r.projectors {
		if p.known {
			out[name] = p.checkpoint
		}
	}
	return out
}

// WaitFor blocks until every named projector (every registered one when
// none is named) has applied or parked the event at pos, that is until its
// checkpoint is at or past pos. It returns ctx's error wrapped when ctx
// ends first, ErrClosed when the runtime closes, and ErrUnknownProjector
// for a name never registered. It is woken by checkpoint moves, not by
// polling.
func (r *Runtime) WaitFor(ctx context.Context, pos eventlog.Position, projectors ...string) error {
	for {
		r.mu.Lock()
		reached := true
		check := func(name string) error {
			p, ok := r.projectors[name]
			if !ok {
				return fmt.Errorf("wait for %q: %w", name, ErrUnknownProjector)
			}
			if p.checkpoint < pos {
				reached = false
			}
			return nil
		}
		names := projectors
		if len(names) == 0 {
			names = r.order
		}
		for _, name := range names {
			if err := check(name); err != nil {
				r.mu.Unlock()
				return err
			}
		}
		changed := r.changed
		r.mu.Unlock()
		if reached {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("wait for position %d: %w", pos, ctx.Err())
		case <-r.done:
			return fmt.Errorf("wait for position %d: %w", pos, ErrClosed)
		}
	}
}
