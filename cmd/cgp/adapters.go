package main

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/adminui"
	"github.com/cgp-platform/cgp/adminui/redissessions"
	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/esdb"
	logpostgres "github.com/cgp-platform/cgp/eventlog/postgres"
	logsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/idempotency"
	idemredis "github.com/cgp-platform/cgp/idempotency/redis"
	idemsqlite "github.com/cgp-platform/cgp/idempotency/sqlite"
	"github.com/cgp-platform/cgp/lease"
	leasepostgres "github.com/cgp-platform/cgp/lease/postgres"
	"github.com/cgp-platform/cgp/limits"
	"github.com/cgp-platform/cgp/limits/memory"
	limitsredis "github.com/cgp-platform/cgp/limits/redis"
	"github.com/cgp-platform/cgp/projections/attribution"
	"github.com/cgp-platform/cgp/readmodel/versioned"
	vclickhouse "github.com/cgp-platform/cgp/readmodel/versioned/clickhouse"
	vsqlite "github.com/cgp-platform/cgp/readmodel/versioned/sqlite"
	"github.com/cgp-platform/cgp/vault"
	"github.com/cgp-platform/cgp/vault/postgres"
	vaultsqlite "github.com/cgp-platform/cgp/vault/sqlite"
)

// adapters are the concrete stores the flags choose among.
var adapters = app.Adapters{
	EventLog: func(ctx context.Context, cfg app.Config) (eventlog.Log, error) {
		switch cfg.EventLog {
		case "esdb":
			return esdb.Open(ctx, esdb.Config{URL: cfg.ESDBURL})
		case "postgres":
			return logpostgres.Open(ctx, logpostgres.Config{URL: cfg.PostgresLogURL})
		}
		return logsqlite.Open(logsqlite.Config{Path: cfg.Path("events.db")})
	},
	Vault: func(ctx context.Context, cfg app.Config, master []byte) (vault.Vault, error) {
		if cfg.Vault == "postgres" {
			return postgres.Open(ctx, postgres.Config{DSN: cfg.PostgresURL, MasterKey: master})
		}
		return vaultsqlite.Open(vaultsqlite.Config{Path: cfg.Path("vault.db"), MasterKey: master})
	},
	Idempotency:      openIdempotency,
	Limits:           openLimits,
	Warehouse:        openWarehouse,
	WarehouseQueries: warehouseQueries,
	Lease:            openLease,
	Sessions:         openSessions,
}

// openSessions opens the admin interface's sessions in Redis when
// configured (several servers share them); nil otherwise (the data
// directory's sessions.db).
func openSessions(cfg app.Config) (adminui.SessionStore, error) {
	if cfg.RedisURL == "" {
		return nil, nil
	}
	opts, err := goredis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	return redissessions.New(redissessions.Config{Client: goredis.NewClient(opts), Now: cfg.Test.SessionNow, CloseClient: true})
}

// openLease opens the leases of the jobs that run on one server at a
// time: PostgreSQL's when configured (several servers share it), else in
// process.
func openLease(cfg app.Config, logger zerolog.Logger) (lease.Lease, error) {
	if cfg.LeasePostgresURL == "" {
		return lease.NewLocal(), nil
	}
	h := cfg.Test.Lease
	return leasepostgres.New(leasepostgres.Config{DSN: cfg.LeasePostgresURL, Namespace: cfg.LeaseNamespace, Poll: h.Poll, Check: h.Check,
		Settle: h.Settle, Logger: logger})
}

// openIdempotency opens the Idempotency-Key store: Redis when configured
// (several servers share it), else an SQLite file of the data directory.
func openIdempotency(cfg app.Config) (idempotency.Store, error) {
	if cfg.RedisURL != "" {
		opts, err := goredis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("redis url: %w", err)
		}
		st, err := idemredis.New(idemredis.Config{Client: goredis.NewClient(opts)})
		if err != nil {
			return nil, fmt.Errorf("idempotency store: %w", err)
		}
		return st, nil
	}
	st, err := idemsqlite.Open(idemsqlite.Config{Path: cfg.Path("idempotency.db")})
	if err != nil {
		return nil, fmt.Errorf("idempotency store: %w", err)
	}
	return st, nil
}

// openLimits opens the brute-force guard and the rate limiter: in Redis
// when configured (shared by several servers), else in process.
func openLimits(cfg app.Config, guardKey []byte) (limits.Guard, limits.Limiter, error) {
	if cfg.RedisURL != "" {
		opts, err := goredis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("redis url: %w", err)
		}
		client := goredis.NewClient(opts)
		guard, err := limitsredis.NewGuard(client, limitsredis.GuardConfig{Secret: guardKey, Now: cfg.Test.GuardNow})
		if err != nil {
			return nil, nil, fmt.Errorf("brute-force guard: %w", err)
		}
		limiter, err := limitsredis.NewLimiter(client, limitsredis.LimiterConfig{})
		if err != nil {
			return nil, nil, fmt.Errorf("rate limiter: %w", err)
		}
		return guard, limiter, nil
	}
	guard, err := memory.NewGuard(memory.GuardConfig{Now: cfg.Test.GuardNow})
	if err != nil {
		return nil, nil, fmt.Errorf("brute-force guard: %w", err)
	}
	limiter, err := memory.NewLimiter(memory.LimiterConfig{})
	if err != nil {
		return nil, nil, fmt.Errorf("rate limiter: %w", err)
	}
	return guard, limiter, nil
}

// openWarehouse opens the warehouse the read models are shipped to: nil
// with --warehouse none.
func openWarehouse(ctx context.Context, cfg app.Config, onErr func(error)) (versioned.Store, error) {
	switch cfg.Warehouse {
	case app.WarehouseSQLite:
		st, err := vsqlite.Open(vsqlite.Config{Path: cfg.Path("warehouse.db"), OnError: onErr})
		if err != nil {
			return nil, fmt.Errorf("warehouse: %w", err)
		}
		return st, nil
	case app.WarehouseClickHouse:
		st, err := vclickhouse.Open(ctx, vclickhouse.Config{URL: cfg.WarehouseURL, OnError: onErr})
		if err != nil {
			return nil, fmt.Errorf("warehouse: %w", err) // the adapter never repeats the URL (it holds a password)
		}
		return st, nil
	default:
		return nil, nil
	}
}

// warehouseQueries answers the attribution summary's SQL from ClickHouse;
// the SQLite warehouse does not (the read model answers).
func warehouseQueries(w versioned.Store) (attribution.Warehouse, bool) {
	ch, ok := w.(*vclickhouse.Store)
	if !ok {
		return nil, false
	}
	return chWarehouse{ch}, true
}

// chWarehouse adapts the ClickHouse warehouse to attribution.Warehouse.
type chWarehouse struct{ s *vclickhouse.Store }

func (w chWarehouse) Query(ctx context.Context, query string, args ...any) (attribution.WarehouseRows, error) {
	return w.s.Query(ctx, query, args...)
}
