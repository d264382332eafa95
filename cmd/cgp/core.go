package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/esdb"
	logsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/vault"
	"github.com/cgp-platform/cgp/vault/postgres"
	vaultsqlite "github.com/cgp-platform/cgp/vault/sqlite"
)

// keyCacheSize bounds the unwrapped data keys kept in memory.
const keyCacheSize = 100_000

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
}

// newLogger builds the one logger of the process: JSON lines, or
// zerolog's human-readable console format with --log-format console, or
// with auto (the default) when w is a terminal.
func newLogger(cfg *Config, w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil {
		level = zerolog.InfoLevel
	}
	if consoleLogs(cfg.LogFormat, w) {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.DateTime, NoColor: !isTerminal(w)}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// consoleLogs says whether logs to w use the console format.
func consoleLogs(format string, w io.Writer) bool {
	switch format {
	case "console":
		return true
	case "json":
		return false
	default:
		return isTerminal(w)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// OpenCore opens the configured event log and key vault.
func OpenCore(ctx context.Context, cfg Config, logger zerolog.Logger) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.ensureDataDir(); err != nil {
		return nil, err
	}
	c := &Core{Config: cfg, Logger: logger}
	master, err := masterKey(&cfg)
	if err != nil {
		return nil, err
	}
	var store vault.Vault
	switch cfg.Vault {
	case "postgres":
		store, err = postgres.Open(ctx, postgres.Config{DSN: cfg.PostgresURL, MasterKey: master})
	default:
		store, err = vaultsqlite.Open(vaultsqlite.Config{Path: cfg.path("vault.db"), MasterKey: master})
	}
	if err != nil {
		return nil, fmt.Errorf("open key vault: %w", err)
	}
	c.Vault = vault.NewCache(store, keyCacheSize)
	c.CursorKey = deriveKey(master, "cgp cursor signing key v1")
	switch cfg.EventLog {
	case "esdb":
		c.Log, err = esdb.Open(ctx, esdb.Config{URL: cfg.ESDBURL})
	default:
		c.Log, err = logsqlite.Open(logsqlite.Config{Path: cfg.path("events.db")})
	}
	if err != nil {
		c.Vault.Close()
		return nil, fmt.Errorf("open event log: %w", err)
	}
	if cfg.onEventLog != nil {
		cfg.onEventLog(c.Log)
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
	k, err := vault.LoadOrCreateKeyFile(cfg.path("master.key"))
	if err != nil {
		return nil, fmt.Errorf("master key file: %w", err)
	}
	return k, nil
}

// Close flushes pending appends and closes the stores.
func (c *Core) Close() error {
	return errors.Join(c.Log.Close(), c.Vault.Close())
}
