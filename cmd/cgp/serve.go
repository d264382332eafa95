package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/ingest"
	"github.com/cgp-platform/cgp/internal/gencache"
	"github.com/cgp-platform/cgp/lastuse"
	"github.com/cgp-platform/cgp/limits"
	"github.com/cgp-platform/cgp/openapi"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/projections/tenancy"
	"github.com/cgp-platform/cgp/readapi"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/replay"
	"github.com/cgp-platform/cgp/writeapi"
)

// App is the whole server: the core, the read side and the HTTP surfaces.
// main builds it with OpenApp and the end-to-end tests build it the same way.
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
	checks    *httpapi.Checks
	// readModelsChanged drops what is cached from the read models (after a
	// tenancy change, or a switch to another read-model version).
	readModelsChanged func()
	// dataDir holds the read-model versions the server follows.
	dataDir string
	// versionPoll is how often the live read-model version is checked.
	versionPoll time.Duration
	// exportWake wakes the data exporter on a new data request (dataexport.go).
	exportWake chan struct{}
	// projectorNames are the registered projectors and reactors.
	projectorNames []string
	// erasures are the GDPR module's processes (app.Erasures).
	erasures *app.Erasures
}

// OpenApp opens every store and builds the HTTP handler. It starts nothing:
// Serve does.
func OpenApp(ctx context.Context, cfg Config, core *Core) (*App, error) {
	a := &App{Core: core, Registry: prometheus.NewRegistry(), dataDir: cfg.DataDir, versionPoll: cfg.versionPoll,
		erasures: &app.Erasures{}}
	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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
	a.Idempotency, err = openIdempotency(cfg)
	if err != nil {
		return nil, errors.Join(err, a.LastUse.Close(), store.Close())
	}
	a.Tenancy = tenancy.NewQueries(store.DB())
	guard, limiter, err := openLimits(cfg, core.CursorKey)
	if err != nil {
		return nil, errors.Join(err, a.LastUse.Close(), store.Close())
	}
	plans := limits.PlanLimits{
		domain.PlanAgency:     limits.PerMinute(cfg.RateAgency),
		domain.PlanEnterprise: limits.PerMinute(cfg.RateEnterprise),
	}
	if err := plans.Validate(); err != nil {
		return nil, errors.Join(fmt.Errorf("rate limits: %w", err), a.LastUse.Close(), store.Close())
	}
	a.Auth = auth.New(auth.Config{
		Tokens: app.Tokens{Q: a.Tenancy},
		WaitFor: func(ctx context.Context, pos uint64) error {
			return a.Runtime.WaitFor(ctx, pos, tenancy.Name)
		},
		Guard:  guard,
		Limits: limiter,
		Plans:  plans,
		OnAlert: func(netip.Addr) {
			// The address itself is personal data: it is not logged.
			core.Logger.Error().Str("alert", "brute_force").Msg("1000 failed authentications in 24 hours from one client address")
		},
		// Read-your-writes waits for every projector: each serves reads
		// (the reactors among them fold their state the same way).
		WaitReads: func(ctx context.Context, pos uint64) error {
			return a.Runtime.WaitFor(ctx, eventlog.Position(pos))
		},
		Head: func(ctx context.Context) (uint64, error) {
			p, err := core.Log.HeadPosition(ctx)
			return uint64(p), err
		},
		Reached: func() uint64 { return uint64(a.Runtime.Checkpoints()[tenancy.Name]) },
	})
	shops := app.Shops{Q: a.Tenancy, Codec: a.Codec, Auth: a.Auth, Cache: gencache.New[string, *ingest.Shop](10_000)}
	a.readModelsChanged = func() {
		a.Auth.Invalidate()
		shops.Cache.Invalidate()
	}
	d := a.deps(a.readModelsChanged, true)
	for _, p := range append(app.Projectors(d), app.Reactors(d)...) {
		if err := store.Migrate(ctx, p.Name, p.Migrations); err != nil {
			return nil, errors.Join(fmt.Errorf("migrate %s: %w", p.Name, err), store.Close())
		}
		if err := a.Runtime.Register(p); err != nil {
			return nil, errors.Join(err, store.Close())
		}
		a.projectorNames = append(a.projectorNames, p.Name)
	}
	a.Warehouse, err = openWarehouse(ctx, cfg, func(err error) { core.Logger.Warn().Err(err).Msg("warehouse insert") })
	if err != nil {
		return nil, errors.Join(err, store.Close())
	}
	if err := a.migrateOutbox(ctx); err != nil {
		return nil, errors.Join(err, a.closeWarehouse(), store.Close())
	}
	*a.erasures = app.Erasures{Store: store, Warehouse: a.Warehouse, Idempotency: a.Idempotency, LastUse: a.LastUse, Vault: a.Vault,
		Commands: a.Commands, Tenancy: a.Tenancy, Registered: func() []string { return a.projectorNames },
		RetentionEvery: cfg.retentionEvery, Now: cfg.retentionClock, Logger: a.Logger}
	a.Customers = customers.NewQueries(store.DB())
	a.Commerce = commerce.NewQueries(store.DB())

	var proxies []netip.Prefix
	for _, p := range cfg.TrustedProxies {
		proxies = append(proxies, netip.MustParsePrefix(p)) // validated by Config.Validate
	}
	stack, err := httpapi.NewStack(httpapi.StackConfig{Logger: core.Logger, Registry: a.Registry, TrustedProxies: proxies})
	if err != nil {
		return nil, errors.Join(err, a.closeWarehouse(), a.LastUse.Close(), store.Close())
	}
	a.checks = httpapi.NewChecks(2 * time.Second)
	a.checks.Add("event_log", func(ctx context.Context) error {
		_, err := core.Log.HeadPosition(ctx)
		return err
	})
	if wh, ok := core.Log.(eventlog.WriteHealthChecker); ok {
		// Not ready while the log cannot take writes (a full disk): every
		// write would be answered 503, so the load balancer should send
		// traffic elsewhere until a probe write succeeds.
		a.checks.Add("event_log_writes", wh.WriteHealth)
	}
	a.checks.Add("read_models", func(ctx context.Context) error { return store.DB().PingContext(ctx) })
	a.checks.Add("projections", func(context.Context) error {
		select {
		case <-a.Runtime.Running():
			return nil
		default:
			return errors.New("projections not started")
		}
	})

	r := httpapi.NewRouter()
	httpapi.RegisterOps(r, a.checks, a.Registry)
	httpapi.Handle(r, httpapi.Beta, http.MethodGet, "/api/v1/openapi.json", httpapi.Compressed(openapi.Handler()))
	authn := a.Auth
	readapi.NewCustomers(a.Customers, authn, mustCursorCodec(core), a.Runtime, time.Now).WithAsOf(asOfReader(a)).Routes(r)
	idem := idempotency.Middleware(a.Idempotency, func(r *http.Request) (string, bool) {
		p, ok := auth.FromContext(r.Context())
		return p.TokenID, ok
	}, idempotency.Options{})
	writeapi.NewCustomers(core.Commands, authn, idem, a.Customers, a.Runtime, time.Now).Routes(r)
	mountOrders(a, r, idem)
	mountCatalog(a, r, idem)
	mountCampaigns(a, r, idem)
	mountJourneys(a, r, idem)
	mountIntelligence(a, r, idem)
	mountAttribution(a, r, idem)
	mountGDPR(a, r) // dataexport.go
	mountAudit(a, r)
	writeapi.NewAPIKeys(core.Commands, authn, idem, app.Directory{Q: a.Tenancy}, time.Now).Routes(r)
	readapi.NewUsage(readapi.UsageConfig{Auth: authn, Keys: app.ImageKeys{Q: a.Tenancy}, Uses: a.LastUse, Plans: app.Directory{Q: a.Tenancy},
		Tokens: app.Directory{Q: a.Tenancy}, Credits: readapi.DefaultAICredits(), Now: time.Now}).Routes(r)
	commerceIn := ingest.NewCommerce(shops, core.Commands, cfg.MaxWebhookBody)
	if cfg.webhookClock != nil {
		commerceIn.WithClock(cfg.webhookClock)
	}
	commerceIn.Routes(r)
	mountMessaging(a, cfg, r)
	mountMarketplaces(a, cfg, r)
	ingest.NewPixel(authn, app.PublicShops{Q: a.Tenancy}, core.Commands).Routes(r)
	a.Router = r
	a.Handler = stack.Wrap(httpapi.WithMaxWait(cfg.MaxWaitForPosition, r))
	return a, nil
}

// deps are the modules' dependencies in this process (app.Modules).
// Without acting (a replay, or listing names) no reactor or projector is
// given the commands or the erase pipeline.
func (a *App) deps(tenancyChanged func(), acting bool) app.Deps {
	d := app.Deps{Codec: a.Codec, TenancyChanged: tenancyChanged}
	if acting {
		if a.exportWake == nil {
			a.exportWake = make(chan struct{}, 1)
		}
		d.Commands = a.Core.Commands
		d.ExportRequested = a.exportRequested
		d.ShopErasure = a.erasures.ReactShopErasure
		d.Vault = a.Vault
	}
	return d
}

// allProjectors returns every projector of the service (the modules'
// read models), in the order the server registers them; a replay rebuilds
// the same. They issue no command: the journeys' enrolment is a reactor
// (projections/enrollment), which a replay never runs.
func allProjectors(a *App, tenancyChanged func()) []projections.Projector {
	return app.Projectors(a.deps(tenancyChanged, false))
}

// allReactors returns every reactor of the service, built without acting
// (names, tables; a replay copies them).
func allReactors(a *App) []projections.Projector { return app.Reactors(a.deps(nil, false)) }

// Serve runs the projections and the HTTP server on ln until ctx ends,
// then drains in-flight requests, stops the projections and flushes the
// event log.
func (a *App) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv, err := httpapi.NewServer(httpapi.ServerConfig{Listener: ln, Handler: a.Handler, Logger: a.Logger, ShutdownGrace: grace})
	if err != nil {
		return err
	}
	// The jobs outlive ctx: they stop after the in-flight requests drained,
	// within the shutdown hook's time.
	jobs := app.NewSupervisor(a.Logger)
	jobs.Add("projections", a.Runtime.Run)
	jobs.Add("token_last_use", func(ctx context.Context) error {
		a.Auth.LastUsed.Run(ctx, a.LastUse, 5*time.Second, func(err error) {
			a.Logger.Warn().Err(err).Msg("saving token last-use times and request counts")
		})
		return nil
	})
	jobs.Add("di_schedule", a.runDISchedule())                 // dischedule.go
	jobs.Add("read_model_versions", a.followReadModelVersions) // replay.go
	jobs.Add("warehouse", a.runWarehouse())                    // warehouse.go
	jobs.Add("erasure_followups", a.erasures.FollowupsJob)
	jobs.Add("retention", a.erasures.RetentionJob)
	jobs.Add("data_exports", a.runDataExports()) // dataexport.go
	jobs.Start(context.WithoutCancel(ctx))
	srv.OnShutdown(func(ctx context.Context) error {
		stopCtx, cancel := context.WithTimeout(ctx, grace)
		defer cancel()
		return errors.Join(jobs.Stop(stopCtx), a.Runtime.Close())
	})
	return srv.Run(ctx)
}

// Close closes the read models and the core.
func (a *App) Close() error {
	var idem error
	if c, ok := a.Idempotency.(interface{ Close() error }); ok {
		idem = c.Close()
	}
	return errors.Join(idem, a.closeWarehouse(), a.LastUse.Close(), a.Store.Close(), a.Core.Close())
}

func (a *App) closeWarehouse() error {
	if a.Warehouse == nil {
		return nil
	}
	return a.Warehouse.Close()
}

func mustCursorCodec(core *Core) *httpapi.CursorCodec {
	c, err := httpapi.NewCursorCodec(core.CursorKey)
	if err != nil {
		panic(err) // CursorKey is derived to 32 bytes by OpenCore
	}
	return c
}

func newServeCommand(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "serve", Short: "Run the HTTP service", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), *cfg, stdout, stderr, nil)
		}}
	cfg.bindServe(cmd.Flags())
	return cmd
}

// serve runs the server until ctx ends. ready, when set, receives the
// listening address once the server accepts connections.
func serve(ctx context.Context, cfg Config, stdout, stderr io.Writer, ready func(addr string)) error {
	logger := newLogger(&cfg, stderr)
	core, err := OpenCore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	app, err := OpenApp(ctx, cfg, core)
	if err != nil {
		return errors.Join(err, core.Close())
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return errors.Join(fmt.Errorf("listen: %w", err), app.Close())
	}
	if cfg.Demo {
		if err := createDemo(ctx, app, ln.Addr().String(), stdout); err != nil {
			return errors.Join(err, ln.Close(), app.Close())
		}
	}
	if cfg.DebugAddr != "" {
		stopDebug, err := serveDebug(cfg.DebugAddr, logger)
		if err != nil {
			return errors.Join(err, ln.Close(), app.Close())
		}
		defer stopDebug()
	}
	logger.Info().Str("addr", ln.Addr().String()).Str("event_log", cfg.EventLog).Str("vault", cfg.Vault).Msg("serving")
	if ready != nil {
		ready(ln.Addr().String())
	}
	err = app.Serve(ctx, ln, cfg.ShutdownGrace)
	return errors.Join(err, app.Close())
}
