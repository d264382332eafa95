package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/adminui"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/lease"
	"github.com/cgp-platform/cgp/limits"
	attributionrm "github.com/cgp-platform/cgp/projections/attribution"
	"github.com/cgp-platform/cgp/readmodel/versioned"
	"github.com/cgp-platform/cgp/vault"
)

// keyCacheSize bounds the unwrapped data keys kept in memory.
const keyCacheSize = 100_000

// Adapters are the concrete stores the configuration chose: cmd/cgp fills
// them (it is the only package that imports the adapters of the event
// log, the vault, the counters, the idempotency records and the
// warehouse), and the app opens them through these functions.
type Adapters struct {
	// EventLog opens the event log (Config.EventLog).
	EventLog func(ctx context.Context, cfg Config) (eventlog.Log, error)
	// Vault opens the key vault (Config.Vault) with the master key.
	Vault func(ctx context.Context, cfg Config, master []byte) (vault.Vault, error)
	// Idempotency opens the Idempotency-Key store (Config.RedisURL or the
	// data directory).
	Idempotency func(cfg Config) (idempotency.Store, error)
	// Limits opens the brute-force guard, keyed by guardKey, and the rate
	// limiter.
	Limits func(cfg Config, guardKey []byte) (limits.Guard, limits.Limiter, error)
	// Warehouse opens the warehouse the read models are shipped to: nil
	// with Config.Warehouse none. onErr receives insert failures.
	Warehouse func(ctx context.Context, cfg Config, onErr func(error)) (versioned.Store, error)
	// WarehouseQueries, when set, answers SQL over the warehouse w (ok
	// false: w cannot, and the read model answers the attribution summary).
	WarehouseQueries func(w versioned.Store) (attributionrm.Warehouse, bool)
	// Lease opens the leases under which the jobs that run on one server
	// at a time run (Config.LeasePostgresURL). Nil: lease.Local, the
	// single server's.
	Lease func(cfg Config, logger zerolog.Logger) (lease.Lease, error)
	// Sessions opens the admin interface's session store shared by
	// several servers (Config.RedisURL); nil, or a nil store: the data
	// directory's sessions.db.
	Sessions func(cfg Config) (adminui.SessionStore, error)
}

// lease opens the configured leases, lease.Local without an adapter.
func (ad Adapters) lease(cfg Config, logger zerolog.Logger) (lease.Lease, error) {
	if ad.Lease == nil {
		return lease.NewLocal(), nil
	}
	l, err := ad.Lease(cfg, logger)
	if err != nil {
		return nil, fmt.Errorf("open leases: %w", err)
	}
	return l, nil
}

// Core is the write side every command of the binary needs: the event log,
// the key vault, the envelope codec and the command handler.
type Core struct {
	Config   Config
	Logger   zerolog.Logger
	Log      eventlog.Log
	Vault    vault.Vault
	Codec    *envelope.Codec
	Commands *commands.Handler
	// CursorKey signs list cursors. It is derived from the master key, so
	// cursors stay valid across restarts and releases.
	CursorKey []byte
	// Adapters open the server's other stores (OpenApp).
	Adapters Adapters
}

// OpenCore opens the configured event log and key vault.
func OpenCore(ctx context.Context, cfg Config, logger zerolog.Logger, ad Adapters) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.EnsureDataDir(); err != nil {
		return nil, err
	}
	c := &Core{Config: cfg, Logger: logger, Adapters: ad}
	master, err := masterKey(&cfg)
	if err != nil {
		return nil, err
	}
	store, err := ad.Vault(ctx, cfg, master)
	if err != nil {
		return nil, fmt.Errorf("open key vault: %w", err)
	}
	c.Vault = vault.NewCache(store, keyCacheSize)
	c.CursorKey = deriveKey(master, "cgp cursor signing key v1")
	c.Log, err = ad.EventLog(ctx, cfg)
	if err != nil {
		c.Vault.Close()
		return nil, fmt.Errorf("open event log: %w", err)
	}
	if cfg.Test.OnEventLog != nil {
		cfg.Test.OnEventLog(c.Log)
	}
	c.Codec = envelope.New(domain.Events(), c.Vault)
	c.Commands = commands.New(c.Log, c.Codec, time.Now)
	return c, nil
}

// deriveKey derives a purpose-bound 32-byte key from the master key.
func deriveKey(master []byte, purpose string) []byte {
	mac := hmac.New(sha256.New, master)
	mac.Write([]byte(purpose))
	return mac.Sum(nil)
}

func masterKey(cfg *Config) ([]byte, error) {
	if cfg.MasterKey != "" {
		k, err := vault.ParseMasterKey(cfg.MasterKey)
		if err != nil {
			return nil, fmt.Errorf("master key: %w", err)
		}
		return k, nil
	}
	k, err := vault.LoadOrCreateKeyFile(cfg.Path("master.key"))
	if err != nil {
		return nil, fmt.Errorf("master key file: %w", err)
	}
	return k, nil
}

// Close flushes pending appends and closes the stores.
func (c *Core) Close() error {
	return errors.Join(c.Log.Close(), c.Vault.Close())
}
