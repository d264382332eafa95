package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/intelligence"
	"github.com/cgp-platform/cgp/projections"
)

// Config is the binary's configuration, filled once from flags and their
// CGP_… environment twins (a flag given on the command line wins).
type Config struct {
	// DataDir holds the embedded stores: events.db, readmodels.db, vault.db,
	// master.key.
	DataDir string
	// Addr is the listen address of cgp serve.
	Addr string
	// LogLevel is a zerolog level name.
	LogLevel string
	// LogFormat is auto (console on a terminal, JSON otherwise), json or
	// console.
	LogFormat string
	// MasterKey wraps the data keys (32 bytes, base64 or hex). Empty means
	// a key file master.key created in DataDir with mode 0600.
	MasterKey string
	// EventLog selects the event-log adapter: sqlite or esdb.
	EventLog string
	// ESDBURL is the EventStoreDB connection string, for EventLog=esdb.
	ESDBURL string
	// Vault selects the key-vault adapter: sqlite or postgres.
	Vault string
	// PostgresURL is the PostgreSQL DSN, for Vault=postgres.
	PostgresURL string
	// RedisURL, when set, keeps rate-limit and brute-force counters and
	// idempotency records in Redis (shared by several servers).
	RedisURL string
	// TrustedProxies are CIDRs whose X-Forwarded-For is believed.
	TrustedProxies []string
	// ShutdownGrace bounds the drain of in-flight requests.
	ShutdownGrace time.Duration
	// MaxWebhookBody is the largest inbound webhook body (413 above).
	MaxWebhookBody int64
	// MaxWaitForPosition bounds every wait for a position: the
	// X-Wait-For-Position header, read-your-writes, a new token's wait for
	// the credentials read model. Zero means the default, 5 s.
	MaxWaitForPosition time.Duration
	// Demo creates a demo account, shop and token on an empty data dir.
	Demo bool
	// RateAgency and RateEnterprise are the requests per minute per token
	// of each plan with API access.
	RateAgency, RateEnterprise int
	// ProjectionBatch is the most events a projector applies in one
	// read-model transaction.
	ProjectionBatch int
	// ReadModelNoSync never fsyncs the read-model store (rmsqlite.Config.NoSync).
	ReadModelNoSync bool
	// DebugAddr, when set, serves net/http/pprof on its own listener
	// (keep it on loopback).
	DebugAddr string
	// DIDailyAt is the UTC time of day (HH:MM) of the daily
	// decision-intelligence run of every installed shop; "off" or empty:
	// no daily run (dischedule.go).
	DIDailyAt string
	// diClock is the daily schedule's clock (time.Now when nil); tests set it.
	diClock func() time.Time
	// Warehouse selects where customers, attribution and touchpoints are
	// shipped for analysts: none, sqlite (DATA_DIR/warehouse.db) or
	// clickhouse (WarehouseURL).
	Warehouse string
	// WarehouseURL is the ClickHouse URL, for Warehouse=clickhouse. A
	// secret: never logged.
	WarehouseURL string
	// versionPoll is how often cgp serve checks which read-model version
	// is live (a replay switches it); defaultVersionPoll when zero.
	versionPoll time.Duration
	// guardNow is the brute-force guard's clock (tests); nil: the real one.
	guardNow func() time.Time
	// SMTPAddr is the SMTP relay (host:port) data exports are mailed
	// through; empty: no e-mail (dataexport.go).
	SMTPAddr string
	// SMTPFrom is the sender address of those mails.
	SMTPFrom string
	// SMTPUsername and SMTPPassword authenticate to the relay (AUTH PLAIN,
	// over STARTTLS). The password is a secret: never logged.
	SMTPUsername, SMTPPassword string
	// OutboundAllowPrivate lifts the outbound guard: connections to
	// addresses shops chose may go to loopback, private and other
	// special-purpose addresses, and over plain http (self-hosting, tests).
	OutboundAllowPrivate bool
	// outboundTLS, when set, is the TLS configuration of outbound
	// connections (tests trust their TLS server with it); exportSMTPTLS is the STARTTLS configuration;
	// exportRetry is the first retry delay (domain.ExportRetryBase when
	// zero) and exportPoll how often due retries are looked for
	// (app.DefaultExportPoll when zero).
	outboundTLS   *tls.Config
	exportSMTPTLS *tls.Config
	exportRetry   time.Duration
	exportPoll    time.Duration
	// retentionEvery is how often the retention countdown runs
	// (app.Erasures); app.DefaultRetentionEvery when zero. Tests set it.
	retentionEvery time.Duration
	// retentionClock is the countdown's clock (time.Now when nil); tests
	// set it.
	retentionClock func() time.Time
	// webhookClock is the commerce receiver's clock for the triggered-at
	// window of destructive topics (time.Now when nil); tests set it.
	webhookClock func() time.Time
	// onEventLog, when set, is given the event log once it is open
	// (tests reach the adapter with it).
	onEventLog func(eventlog.Log)
}

// bindCommon registers the flags every command takes.
func (c *Config) bindCommon(fs *pflag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", "./data", "data directory of the embedded stores (env CGP_DATA_DIR)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error (env CGP_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", "auto", "log format: auto (human-readable on a terminal, JSON otherwise), json or console (env CGP_LOG_FORMAT)")
	fs.StringVar(&c.MasterKey, "master-key", "", "master key wrapping the data keys, 32 bytes base64 or hex; default: DATA_DIR/master.key (env CGP_MASTER_KEY)")
	fs.StringVar(&c.EventLog, "event-log", "sqlite", "event-log adapter: sqlite or esdb (env CGP_EVENT_LOG)")
	fs.StringVar(&c.ESDBURL, "esdb-url", "", "EventStoreDB connection string, with --event-log esdb (env CGP_ESDB_URL)")
	fs.StringVar(&c.Vault, "vault", "sqlite", "key-vault adapter: sqlite or postgres (env CGP_VAULT)")
	fs.StringVar(&c.PostgresURL, "postgres-url", "", "PostgreSQL DSN, with --vault postgres (env CGP_POSTGRES_URL)")
	fs.StringVar(&c.RedisURL, "redis-url", "", "Redis URL for rate limits, brute-force counters and idempotency records; default: in-process and the data directory (env CGP_REDIS_URL)")
	fs.BoolVar(&c.OutboundAllowPrivate, "outbound-allow-private", false, "let outbound connections to addresses shops chose (data-request URL, webhooks) reach loopback, private and other special-purpose addresses, and use plain http; for self-hosting and tests (env CGP_OUTBOUND_ALLOW_PRIVATE)")
}

// bindServe registers the flags of cgp serve.
func (c *Config) bindServe(fs *pflag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "listen address (env CGP_ADDR)")
	fs.StringSliceVar(&c.TrustedProxies, "trusted-proxies", nil, "CIDRs of reverse proxies whose X-Forwarded-For is trusted (env CGP_TRUSTED_PROXIES)")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", 10*time.Second, "time to drain in-flight requests on shutdown (env CGP_SHUTDOWN_GRACE)")
	fs.Int64Var(&c.MaxWebhookBody, "max-webhook-body", 1<<20, "largest inbound webhook body in bytes (env CGP_MAX_WEBHOOK_BODY)")
	fs.DurationVar(&c.MaxWaitForPosition, "max-wait-for-position", httpapi.DefaultMaxWaitForPosition, "longest a request waits for the read models to reach a position (X-Wait-For-Position, its own credential's last write, a token just issued) before 503 (env CGP_MAX_WAIT_FOR_POSITION)")
	fs.IntVar(&c.RateAgency, "rate-limit-agency", 600, "requests per minute per token on the agency plan (env CGP_RATE_LIMIT_AGENCY)")
	fs.IntVar(&c.RateEnterprise, "rate-limit-enterprise", 3000, "requests per minute per token on the enterprise plan (env CGP_RATE_LIMIT_ENTERPRISE)")
	fs.IntVar(&c.ProjectionBatch, "projection-batch", projections.DefaultBatch, "most events a projector applies in one read-model transaction (env CGP_PROJECTION_BATCH)")
	fs.BoolVar(&c.ReadModelNoSync, "read-model-nosync", false, "never fsync the read-model store: rebuilds write far less, but an OS crash or power loss may corrupt readmodels.db, to be deleted and rebuilt from the log (env CGP_READ_MODEL_NOSYNC)")
	fs.StringVar(&c.DebugAddr, "debug-addr", "", "serve Go profiling (net/http/pprof) on this address, e.g. 127.0.0.1:6060; off when empty (env CGP_DEBUG_ADDR)")
	fs.StringVar(&c.DIDailyAt, "di-daily-at", "02:00", "UTC time of day HH:MM of the daily decision-intelligence run of every installed shop, or off (env CGP_DI_DAILY_AT)")
	fs.StringVar(&c.Warehouse, "warehouse", warehouseNone, "ship customers, attribution and touchpoints to a warehouse for analysts: none, sqlite (DATA_DIR/warehouse.db) or clickhouse (env CGP_WAREHOUSE)")
	fs.StringVar(&c.WarehouseURL, "warehouse-url", "", "ClickHouse URL with --warehouse clickhouse, e.g. clickhouse://user:password@host:9000/db (env CGP_WAREHOUSE_URL)")
	fs.StringVar(&c.SMTPAddr, "smtp-addr", "", "SMTP relay host:port that mails data exports to the shops' contact e-mail; off when empty (env CGP_SMTP_ADDR)")
	fs.StringVar(&c.SMTPFrom, "smtp-from", "", "sender address of the data-export mails (env CGP_SMTP_FROM)")
	fs.StringVar(&c.SMTPUsername, "smtp-username", "", "SMTP user name, AUTH PLAIN over STARTTLS (env CGP_SMTP_USERNAME)")
	fs.StringVar(&c.SMTPPassword, "smtp-password", "", "SMTP password; never logged (env CGP_SMTP_PASSWORD)")
	fs.BoolVar(&c.Demo, "demo", false, "on an empty data directory, create a demo account, shop and token and print them (env CGP_DEMO)")
}

// applyEnv fills every flag not set on the command line from its
// environment twin: --data-dir from CGP_DATA_DIR, and so on.
func applyEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed {
			return
		}
		name := "CGP_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v, ok := lookup(name)
		if !ok {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	})
	return errors.Join(errs...)
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("data-dir is required"))
	}
	if _, err := zerolog.ParseLevel(c.LogLevel); err != nil || c.LogLevel == "" {
		errs = append(errs, fmt.Errorf("log-level %q is not a level", c.LogLevel))
	}
	if !slices.Contains([]string{"", "auto", "json", "console"}, c.LogFormat) {
		errs = append(errs, fmt.Errorf("log-format %q is not auto, json or console", c.LogFormat))
	}
	switch c.EventLog {
	case "sqlite":
	case "esdb":
		if c.ESDBURL == "" {
			errs = append(errs, errors.New("esdb-url is required with event-log esdb"))
		}
	default:
		errs = append(errs, fmt.Errorf("event-log %q: want sqlite or esdb", c.EventLog))
	}
	switch c.Warehouse {
	case "", warehouseNone, warehouseSQLite:
	case warehouseClickHouse:
		if c.WarehouseURL == "" {
			errs = append(errs, errors.New("warehouse-url is required with warehouse clickhouse"))
		}
	default:
		errs = append(errs, fmt.Errorf("warehouse %q: want none, sqlite or clickhouse", c.Warehouse))
	}
	switch c.Vault {
	case "sqlite":
	case "postgres":
		if c.PostgresURL == "" {
			errs = append(errs, errors.New("postgres-url is required with vault postgres"))
		}
	default:
		errs = append(errs, fmt.Errorf("vault %q: want sqlite or postgres", c.Vault))
	}
	for _, p := range c.TrustedProxies {
		if _, err := netip.ParsePrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("trusted-proxies: %q is not a CIDR", p))
		}
	}
	if c.ShutdownGrace < 0 {
		errs = append(errs, errors.New("shutdown-grace must not be negative"))
	}
	if c.ProjectionBatch < 0 || c.ProjectionBatch > 10_000 {
		errs = append(errs, errors.New("projection-batch must be 1 to 10000"))
	}
	if c.RateAgency < 0 || c.RateEnterprise < 0 {
		errs = append(errs, errors.New("rate limits must not be negative"))
	}
	if c.MaxWebhookBody < 0 {
		errs = append(errs, errors.New("max-webhook-body must not be negative"))
	}
	if c.MaxWaitForPosition < 0 || c.MaxWaitForPosition > 10*time.Minute {
		errs = append(errs, errors.New("max-wait-for-position must be 0 (the default, 5s) to 10m"))
	}
	if c.SMTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.SMTPAddr); err != nil {
			errs = append(errs, fmt.Errorf("smtp-addr %q: want host:port", c.SMTPAddr))
		}
		if _, err := mail.ParseAddress(c.SMTPFrom); err != nil {
			errs = append(errs, errors.New("smtp-from must be an e-mail address with smtp-addr"))
		}
	}
	if _, _, err := intelligence.ParseDailyAt(c.DIDailyAt); err != nil {
		errs = append(errs, fmt.Errorf("di-daily-at: %w", err))
	}
	return errors.Join(errs...)
}

func (c *Config) path(name string) string { return filepath.Join(c.DataDir, name) }

func (c *Config) ensureDataDir() error {
	_, statErr := os.Stat(c.DataDir)
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) { // ours: the owner's only, whatever the umask
		if err := os.Chmod(c.DataDir, 0o700); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
	}
	return nil
}
