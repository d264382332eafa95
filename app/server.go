package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/cgp-platform/cgp/adminui"
	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/concierge"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/ingest"
	"github.com/cgp-platform/cgp/internal/gencache"
	"github.com/cgp-platform/cgp/lastuse"
	"github.com/cgp-platform/cgp/lease"
	"github.com/cgp-platform/cgp/limits"
	"github.com/cgp-platform/cgp/notify"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/conciergereplies"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/projections/tenancy"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/replay"
	"github.com/cgp-platform/cgp/sending"
	"github.com/cgp-platform/cgp/webhooks"
)

// App is the whole server: the core, the read side and the HTTP surfaces.
// cmd/cgp builds it with OpenApp and the end-to-end tests build it the
// same way.
type App struct {
	*Core
	Store       *rmsqlite.Store
	Runtime     *projections.Runtime
	Registry    *prometheus.Registry
	Router      *mux.Router
	Handler     http.Handler
	Tenancy     *tenancy.Queries
	Customers   *customers.Queries
	Commerce    *commerce.Queries
	Auth        *auth.Authenticator
	LastUse     *lastuse.Store
	Idempotency idempotency.Store
	// Warehouse receives the shipped read models (nil: --warehouse none).
	Warehouse versioned.Store
	// Lease is what the jobs that run on one server at a time run under
	// (OnOneServer): lease.Local for a single server, PostgreSQL's when
	// several share the log.
	Lease lease.Lease
	// leaseHeld is 1 for each OnOneServer job this server runs now
	// (cgp_lease_held{job}).
	leaseHeld *prometheus.GaugeVec
	checks    *httpapi.Checks
	// shops finds a webhook's shop (cached).
	shops Shops
	// cursors signs the list cursors.
	cursors *httpapi.CursorCodec
	// readModelsChanged drops what is cached from the read models (after a
	// tenancy change, or a switch to another read-model version).
	readModelsChanged func()
	// exportWake wakes the data exporter on a new data request (jobs.go).
	exportWake chan struct{}
	// projectorNames are the registered projectors and reactors.
	projectorNames []string
	// erasures are the GDPR module's processes.
	erasures *Erasures
	// Webhooks is the outbound webhooks' delivery side: its own store
	// (webhooks.db), fan-out reactor and dispatcher.
	Webhooks *webhooks.Service
	// Sending sends the campaigns', journeys' and flows' messages.
	Sending *sending.Service
	// Notify delivers the merchants' notifications and the operator's
	// alerts by e-mail and chat.
	Notify *notify.Service
	// bruteForce carries the brute-force guard's alerts to the
	// brute_force_alerts job (anomalies.go).
	bruteForce chan bruteForceAlert
	// answerer is the AI concierge's answerer (Config.ConciergeAnswerer),
	// answererName its name in ConciergeAnswered.
	answerer     concierge.Answerer
	answererName string
	// conciergeAnswers is the concierge's answering job (deps builds it).
	conciergeAnswers *conciergereplies.Answers
	// Images runs the image operations: their object store, engines and
	// workers.
	Images *Images
	// Platform is the connection to the commerce platform (install flow,
	// sessions, the Admin API).
	Platform *Platform
	// Sessions are the admin interface's sign-in sessions (sessions.db).
	Sessions adminui.SessionStore
	// limiter is the server's rate limiter (in-process or Redis): the
	// tokens' limits and the review submissions' spam limits.
	limiter limits.Limiter
}

// OpenApp opens every store and builds the HTTP handler, mounting every
// module's routes (Modules). It starts nothing: Serve does.
func OpenApp(ctx context.Context, cfg Config, core *Core) (*App, error) {
	a := &App{Core: core, Registry: prometheus.NewRegistry(), erasures: &Erasures{}}
	a.leaseHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cgp_lease_held",
		Help: "1 while this server runs the job, which runs on one server at a time under its lease; 0 while another does or none"},
		[]string{"job"})
	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), a.leaseHeld)
	cursors, err := httpapi.NewCursorCodec(core.CursorKey)
	if err != nil {
		return nil, err
	}
	a.cursors = cursors
	if a.Lease, err = core.Adapters.lease(cfg, core.Logger); err != nil {
		return nil, err
	}
	rmPath, err := replay.Current(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	store, err := rmsqlite.Open(rmsqlite.Config{Path: rmPath, NoSync: cfg.ReadModelNoSync})
	if err != nil {
		return nil, fmt.Errorf("open read models: %w", err)
	}
	a.Store = store
	a.Runtime, err = projections.New(projections.Config{Log: core.Log, Store: store, Logger: core.Logger, Registry: a.Registry,
		Batch: cfg.ProjectionBatch})
	if err != nil {
		return nil, errors.Join(err, store.Close())
	}
	a.LastUse, err = lastuse.Open(filepath.Join(cfg.DataDir, "lastuse.db"))
	if err != nil {
		return nil, errors.Join(err, store.Close())
	}
	a.Idempotency, err = core.Adapters.Idempotency(cfg)
	if err != nil {
		return nil, errors.Join(err, a.LastUse.Close(), store.Close())
	}
	a.Tenancy = tenancy.NewQueries(store.DB())
	guard, limiter, err := core.Adapters.Limits(cfg, deriveKey(core.CursorKey, "cgp guard key v1"))
	if err != nil {
		return nil, errors.Join(err, a.LastUse.Close(), store.Close())
	}
	a.limiter = limiter
	plans := limits.PlanLimits{
		domain.PlanAgency:     limits.PerMinute(cfg.RateAgency),
		domain.PlanEnterprise: limits.PerMinute(cfg.RateEnterprise),
	}
	if err := plans.Validate(); err != nil {
		return nil, errors.Join(fmt.Errorf("rate limits: %w", err), a.LastUse.Close(), store.Close())
	}
	a.bruteForce = make(chan bruteForceAlert, maxPendingAlerts)
	guardNow := cfg.Test.GuardNow
	if guardNow == nil {
		guardNow = time.Now
	}
	a.Auth = auth.New(auth.Config{
		Tokens: Tokens{Q: a.Tenancy},
		WaitFor: func(ctx context.Context, pos uint64) error {
			return a.Runtime.WaitFor(ctx, pos, tenancy.Name)
		},
		Guard:  guard,
		Limits: limiter,
		Plans:  plans,
		// An operator anomaly (anomalies.go); the address itself is
		// personal data: it is not logged.
		OnAlert: a.onBruteForceAlert(guardNow),
		// Read-your-writes waits for every projector: each serves reads
		// (the reactors among them fold their state the same way).
		WaitReads: func(ctx context.Context, pos uint64) error {
			return a.Runtime.WaitFor(ctx, eventlog.Position(pos))
		},
		// The committed head, where the log tells it: a token created by
		// another process an instant ago, just after a batch of this
		// server's still being made durable, is waited for rather than
		// refused.
		Head: func(ctx context.Context) (uint64, error) {
			if ch, ok := core.Log.(eventlog.CommittedHeader); ok {
				p, err := ch.CommittedHead(ctx)
				return uint64(p), err
			}
			p, err := core.Log.HeadPosition(ctx)
			return uint64(p), err
		},
		Reached: func() uint64 { return uint64(a.Runtime.Checkpoints()[tenancy.Name]) },
	})
	a.shops = Shops{Q: a.Tenancy, Codec: a.Codec, Auth: a.Auth, Cache: gencache.New[string, *ingest.Shop](10_000)}
	a.readModelsChanged = func() {
		a.Auth.Invalidate()
		a.shops.Cache.Invalidate()
	}
	if a.answerer, a.answererName, err = cfg.ConciergeAnswerer(); err != nil {
		return nil, errors.Join(err, a.LastUse.Close(), store.Close())
	}
	if a.Images, err = openImages(cfg, core, a); err != nil {
		return nil, errors.Join(err, a.LastUse.Close(), store.Close())
	}
	if a.Platform, err = openPlatform(cfg, core, a); err != nil {
		return nil, errors.Join(err, a.LastUse.Close(), store.Close())
	}
	changed := a.readModelsChanged
	a.readModelsChanged = func() {
		changed()
		a.Platform.wake()
	}
	d := a.deps(a.readModelsChanged, true)
	for _, p := range append(Projectors(d), Reactors(d)...) {
		if err := store.Migrate(ctx, p.Name, p.Migrations); err != nil {
			return nil, errors.Join(fmt.Errorf("migrate %s: %w", p.Name, err), store.Close())
		}
		if err := a.Runtime.Register(p); err != nil {
			return nil, errors.Join(err, store.Close())
		}
		a.projectorNames = append(a.projectorNames, p.Name)
	}
	if core.Adapters.Warehouse != nil {
		a.Warehouse, err = core.Adapters.Warehouse(ctx, cfg, func(err error) { core.Logger.Warn().Err(err).Msg("warehouse insert") })
		if err != nil {
			return nil, errors.Join(err, store.Close())
		}
	}
	if err := a.migrateOutbox(ctx); err != nil {
		return nil, errors.Join(err, a.closeWarehouse(), store.Close())
	}
	if a.Webhooks, err = openWebhooks(ctx, cfg, core, a.Registry); err != nil {
		return nil, errors.Join(err, a.closeWarehouse(), store.Close())
	}
	if a.Sending, err = openSending(ctx, cfg, core, a, a.Registry); err != nil {
		return nil, errors.Join(err, a.closeWarehouse(), a.closeSides(), store.Close())
	}
	if a.Notify, err = openNotify(ctx, cfg, core, a, a.Registry); err != nil {
		return nil, errors.Join(err, a.closeWarehouse(), a.closeSides(), store.Close())
	}
	*a.erasures = Erasures{Store: store, Warehouse: a.Warehouse, Images: a.Images.Store, Sides: a.sides(), Idempotency: a.Idempotency, LastUse: a.LastUse, Vault: a.Vault,
		Commands: a.Commands, Tenancy: a.Tenancy, Registered: func() []string { return a.projectorNames },
		RetentionEvery: cfg.Test.RetentionEvery, Now: cfg.Test.RetentionClock, Logger: a.Logger}
	a.Customers = customers.NewQueries(store.DB())
	a.Commerce = commerce.NewQueries(store.DB())

	var proxies []netip.Prefix
	for _, p := range cfg.TrustedProxies {
		proxies = append(proxies, netip.MustParsePrefix(p)) // validated by Config.Validate
	}
	stack, err := httpapi.NewStack(httpapi.StackConfig{Logger: core.Logger, Registry: a.Registry, TrustedProxies: proxies})
	if err != nil {
		return nil, errors.Join(err, a.closeWarehouse(), a.closeSides(), a.LastUse.Close(), store.Close())
	}
	a.checks = a.readinessChecks()
	r := httpapi.NewRouter()
	sealer, err := idempotency.NewSealer(deriveKey(core.CursorKey, "cgp idempotency answers v1"))
	if err != nil {
		return nil, errors.Join(err, a.closeWarehouse(), a.closeSides(), a.LastUse.Close(), store.Close())
	}
	if core.Adapters.Sessions != nil {
		if a.Sessions, err = core.Adapters.Sessions(cfg); err != nil {
			return nil, errors.Join(fmt.Errorf("admin sessions: %w", err), a.closeWarehouse(), a.closeSides(), a.LastUse.Close(), store.Close())
		}
	}
	if a.Sessions == nil {
		a.Sessions, err = adminui.OpenSessions(filepath.Join(cfg.DataDir, "sessions.db"), cfg.Test.SessionNow)
	}
	if err != nil {
		return nil, errors.Join(err, a.closeWarehouse(), a.closeSides(), a.LastUse.Close(), store.Close())
	}
	idem := idempotency.Middleware(a.Idempotency, func(r *http.Request) (string, bool) {
		p, ok := auth.FromContext(r.Context())
		return p.TokenID, ok
	}, idempotency.Options{Sealer: sealer})
	for _, m := range Modules() {
		for _, rt := range m.Routes {
			rt.Mount(a, r, idem)
		}
	}
	a.Router = r
	a.Handler = stack.Wrap(httpapi.WithMaxWait(cfg.MaxWaitForPosition, r))
	return a, nil
}

// readinessChecks are what /readyz checks.
func (a *App) readinessChecks() *httpapi.Checks {
	checks := httpapi.NewChecks(2 * time.Second)
	checks.Add("event_log", func(ctx context.Context) error {
		_, err := a.Log.HeadPosition(ctx)
		return err
	})
	if wh, ok := a.Log.(eventlog.WriteHealthChecker); ok {
		// Not ready while the log cannot take writes (a full disk): every
		// write would be answered 503, so the load balancer should send
		// traffic elsewhere until a probe write succeeds.
		checks.Add("event_log_writes", wh.WriteHealth)
	}
	checks.Add("read_models", func(ctx context.Context) error { return a.Store.DB().PingContext(ctx) })
	checks.Add("projections", func(context.Context) error {
		select {
		case <-a.Runtime.Running():
			return nil
		default:
			return errors.New("projections not started")
		}
	})
	return checks
}

// deps are the modules' dependencies in this process (Modules). Without
// acting (a replay, or listing names) no reactor or projector is given the
// commands or the erase pipeline.
func (a *App) deps(tenancyChanged func(), acting bool) Deps {
	d := Deps{TenancyChanged: tenancyChanged}
	if a.Core != nil {
		d.Codec = a.Codec
	}
	if acting {
		if a.exportWake == nil {
			a.exportWake = make(chan struct{}, 1)
		}
		d.Commands = a.Core.Commands
		d.ExportRequested = a.exportRequested
		d.ShopErasure = a.erasures.ReactShopErasure
		d.Vault = a.Vault
		if a.Images != nil {
			d.ImagesChanged = a.Images.changed
		}
		d.Answerer, d.AnswererName = a.answerer, a.answererName
		if a.answerer != nil && a.Store != nil {
			if a.conciergeAnswers == nil {
				a.conciergeAnswers = conciergereplies.NewAnswers(conciergereplies.Answers{DB: a.Store.DB(), Write: a.Store.Maintain,
					Log: a.Log, Codec: a.Codec, Config: conciergeConfig(d), Logger: a.Logger})
			}
			d.ConciergeAnswers = a.conciergeAnswers
		}
	}
	return d
}

// AllProjectors returns every projector of the service (the modules'
// read models), in the order the server registers them; a replay rebuilds
// the same. They issue no command: the journeys' enrolment is a reactor
// (projections/enrollment), which a replay never runs.
func (a *App) AllProjectors(tenancyChanged func()) []projections.Projector {
	return Projectors(a.deps(tenancyChanged, false))
}

// AllReactors returns every reactor of the service, built without acting
// (names, tables; a replay copies them).
func (a *App) AllReactors() []projections.Projector { return Reactors(a.deps(nil, false)) }

// holding returns run setting held to 1 while it runs (0 meanwhile); nil
// stays nil.
func holding(held prometheus.Gauge, run func(ctx context.Context) error) func(ctx context.Context) error {
	if run == nil {
		return nil
	}
	held.Set(0)
	return func(ctx context.Context) error {
		held.Set(1)
		defer held.Set(0)
		return run(ctx)
	}
}

// JobLease is the name of the lease a job that runs on one server at a
// time holds while it runs (OnOneServer).
func JobLease(job string) string { return "job/" + job }

// Serve runs every module's background jobs (Modules), those that run on
// one server at a time under their lease (OnOneServer), and the HTTP server
// on ln until ctx ends, then drains in-flight requests, stops the jobs and
// the projections, and flushes the event log.
func (a *App) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv, err := httpapi.NewServer(httpapi.ServerConfig{Listener: ln, Handler: a.Handler, Logger: a.Logger, ShutdownGrace: grace})
	if err != nil {
		return err
	}
	// The jobs outlive ctx: they stop after the in-flight requests drained,
	// within the shutdown hook's time.
	jobs := NewSupervisor(a.Logger)
	for _, m := range Modules() {
		for _, j := range m.Jobs {
			run := j.Build(a)
			if j.Runs == OnOneServer {
				run = OneAtATime(a.Lease, JobLease(j.Name), a.Logger, holding(a.leaseHeld.WithLabelValues(j.Name), run))
			}
			jobs.Add(j.Name, run)
		}
	}
	jobs.Start(context.WithoutCancel(ctx))
	srv.OnShutdown(func(ctx context.Context) error {
		stopCtx, cancel := context.WithTimeout(ctx, grace)
		defer cancel()
		return errors.Join(jobs.Stop(stopCtx), a.Runtime.Close())
	})
	return srv.Run(ctx)
}

// sides are the sides with a store of their own, as the erasures see
// them.
func (a *App) sides() []Side {
	return []Side{{Name: "sending", Reactor: sending.OutboxName, Store: a.Sending.Store},
		{Name: "notification", Reactor: notify.OutboxName, Store: a.Notify.Store},
		{Name: "webhook delivery", Reactor: webhooks.FanoutName, Store: a.Webhooks.Store}}
}

// closeSides closes the sides with a store of their own that are open.
func (a *App) closeSides() error {
	var errs []error
	if a.Notify != nil {
		errs = append(errs, a.Notify.Close())
	}
	if a.Sending != nil {
		errs = append(errs, a.Sending.Close())
	}
	if a.Webhooks != nil {
		errs = append(errs, a.Webhooks.Close())
	}
	errs = append(errs, a.Images.Close())
	return errors.Join(errs...)
}

// Close closes the read models and the core.
func (a *App) Close() error {
	var idem error
	if c, ok := a.Idempotency.(interface{ Close() error }); ok {
		idem = c.Close()
	}
	var sessions error
	if a.Sessions != nil {
		sessions = a.Sessions.Close()
	}
	return errors.Join(idem, sessions, a.closeWarehouse(), a.closeSides(), a.LastUse.Close(), a.Store.Close(), a.Core.Close())
}

func (a *App) closeWarehouse() error {
	if a.Warehouse == nil {
		return nil
	}
	return a.Warehouse.Close()
}
