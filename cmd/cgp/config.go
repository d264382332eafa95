package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/channels/whatsapp"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/platformapi"
	"github.com/cgp-platform/cgp/projections"
)

// Config is the binary's configuration (app.Config), bound here to flags.
type Config = app.Config

// bindCommon registers the flags every command takes.
func bindCommon(c *Config, fs *pflag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", "./data", "data directory of the embedded stores (env CGP_DATA_DIR)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error (env CGP_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", "auto", "log format: auto (human-readable on a terminal, JSON otherwise), json or console (env CGP_LOG_FORMAT)")
	fs.StringVar(&c.MasterKey, "master-key", "", "master key wrapping the data keys, 32 bytes base64 or hex; default: DATA_DIR/master.key (env CGP_MASTER_KEY)")
	fs.StringVar(&c.EventLog, "event-log", "sqlite", "event-log adapter: sqlite, postgres or esdb (env CGP_EVENT_LOG)")
	fs.StringVar(&c.PostgresLogURL, "postgres-log-url", "", "PostgreSQL connection string of the event log, with --event-log postgres; its search_path names the schema (default cgp_eventlog) (env CGP_POSTGRES_LOG_URL)")
	fs.StringVar(&c.ESDBURL, "esdb-url", "", "EventStoreDB connection string, with --event-log esdb (env CGP_ESDB_URL)")
	fs.StringVar(&c.Vault, "vault", "sqlite", "key-vault adapter: sqlite or postgres (env CGP_VAULT)")
	fs.StringVar(&c.PostgresURL, "postgres-url", "", "PostgreSQL DSN, with --vault postgres (env CGP_POSTGRES_URL)")
	fs.StringVar(&c.RedisURL, "redis-url", "", "Redis URL for rate limits, brute-force counters and idempotency records; default: in-process and the data directory (env CGP_REDIS_URL)")
	fs.BoolVar(&c.OutboundAllowPrivate, "outbound-allow-private", false, "let outbound connections to addresses shops chose (data-request URL, webhooks) reach loopback, private and other special-purpose addresses, and use plain http; for self-hosting and tests (env CGP_OUTBOUND_ALLOW_PRIVATE)")
}

// bindServe registers the flags of cgp serve.
func bindServe(c *Config, fs *pflag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "listen address (env CGP_ADDR)")
	fs.StringVar(&c.LeaseNamespace, "lease-namespace", "cgp", "namespace of the leases' lock keys (--lease-postgres-url): the same for every server sharing the log, another for each deployment sharing the database (env CGP_LEASE_NAMESPACE)")
	fs.StringVar(&c.LeasePostgresURL, "lease-postgres-url", "", "PostgreSQL DSN of the leases that let one server at a time run each job performing side effects (sending, webhook delivery, notifications, exports, …), another taking over when it dies; the same for every server sharing the log; default: in process, for a single server (env CGP_LEASE_POSTGRES_URL)")
	fs.StringSliceVar(&c.TrustedProxies, "trusted-proxies", nil, "CIDRs of reverse proxies whose X-Forwarded-For is trusted (env CGP_TRUSTED_PROXIES)")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", 10*time.Second, "time to drain in-flight requests on shutdown (env CGP_SHUTDOWN_GRACE)")
	fs.Int64Var(&c.MaxWebhookBody, "max-webhook-body", 1<<20, "largest inbound webhook body in bytes (env CGP_MAX_WEBHOOK_BODY)")
	fs.DurationVar(&c.MaxWaitForPosition, "max-wait-for-position", httpapi.DefaultMaxWaitForPosition, "longest a request waits for the read models to reach a position (X-Wait-For-Position, its own credential's last write, a token just issued) before 503 (env CGP_MAX_WAIT_FOR_POSITION)")
	fs.IntVar(&c.RateAgency, "rate-limit-agency", 600, "requests per minute per token on the agency plan (env CGP_RATE_LIMIT_AGENCY)")
	fs.IntVar(&c.RateEnterprise, "rate-limit-enterprise", 3000, "requests per minute per token on the enterprise plan (env CGP_RATE_LIMIT_ENTERPRISE)")
	fs.IntVar(&c.ProjectionBatch, "projection-batch", projections.DefaultBatch, "most events a projector applies in one read-model transaction (env CGP_PROJECTION_BATCH)")
	fs.Int64Var(&c.InitialBuildEvents, "initial-build-events", app.DefaultInitialBuildEvents, "a server started without read models on a log of at least this many events builds them as cgp replay does (every core, indexes at the end) before serving, answering 503 meanwhile; 0: never (env CGP_INITIAL_BUILD_EVENTS)")
	fs.BoolVar(&c.ReadModelNoSync, "read-model-nosync", false, "never fsync the read-model store: rebuilds write far less, but an OS crash or power loss may corrupt readmodels.db, to be deleted and rebuilt from the log (env CGP_READ_MODEL_NOSYNC)")
	fs.StringVar(&c.DebugAddr, "debug-addr", "", "serve Go profiling (net/http/pprof) on this address, e.g. 127.0.0.1:6060; off when empty (env CGP_DEBUG_ADDR)")
	fs.StringVar(&c.DIDailyAt, "di-daily-at", "02:00", "UTC time of day HH:MM of the daily decision-intelligence run of every installed shop, or off (env CGP_DI_DAILY_AT)")
	fs.StringVar(&c.Warehouse, "warehouse", app.WarehouseNone, "ship customers, attribution and touchpoints to a warehouse for analysts: none, sqlite (DATA_DIR/warehouse.db) or clickhouse (env CGP_WAREHOUSE)")
	fs.StringVar(&c.WarehouseURL, "warehouse-url", "", "ClickHouse URL with --warehouse clickhouse, e.g. clickhouse://user:password@host:9000/db (env CGP_WAREHOUSE_URL)")
	fs.StringVar(&c.SMTPAddr, "smtp-addr", "", "SMTP relay host:port that mails data exports to the shops' contact e-mail; off when empty (env CGP_SMTP_ADDR)")
	fs.StringVar(&c.SMTPFrom, "smtp-from", "", "sender address of the data-export mails (env CGP_SMTP_FROM)")
	fs.StringVar(&c.SMTPUsername, "smtp-username", "", "SMTP user name, AUTH PLAIN over STARTTLS (env CGP_SMTP_USERNAME)")
	fs.StringVar(&c.SMTPPassword, "smtp-password", "", "SMTP password; never logged (env CGP_SMTP_PASSWORD)")
	fs.StringVar(&c.OperatorEmail, "operator-email", "", "address of the operator's alerts (1,000 failed authentications from an address in 24 hours), mailed through --smtp-addr; off when empty (env CGP_OPERATOR_EMAIL)")
	fs.StringVar(&c.NotifyChatTemplate, "notify-chat-template", app.DefaultNotifyChatTemplate, "WhatsApp template of the merchant's chat notifications, approved on the shop's account; its body takes the alert's title and the shop's domain (env CGP_NOTIFY_CHAT_TEMPLATE)")
	fs.StringVar(&c.NotifyChatLanguage, "notify-chat-language", "en_US", "language of --notify-chat-template (env CGP_NOTIFY_CHAT_LANGUAGE)")
	fs.DurationVar(&c.MessageReconcileWindow, "message-reconcile-window", 10*time.Minute, "how long a WhatsApp message a crash left in doubt waits for its status webhook before it is sent again (env CGP_MESSAGE_RECONCILE_WINDOW)")
	fs.StringVar(&c.WhatsAppAPIURL, "whatsapp-api-url", whatsapp.DefaultBaseURL, "WhatsApp Cloud API base address with its version that messages are sent through; https, or http with --outbound-allow-private (env CGP_WHATSAPP_API_URL)")
	fs.StringVar(&c.PublicURL, "public-url", "", "public base address of the service, the start of the unsubscribe links in messages; default http://ADDR (env CGP_PUBLIC_URL)")
	fs.StringVar(&c.SMSAPIURL, "sms-api-url", "", "SMS provider base address; texts are posted to {url}/v1/messages (the generic contract in the README); https, or http with --outbound-allow-private; off when empty (env CGP_SMS_API_URL)")
	fs.StringVar(&c.SMSAPIKey, "sms-api-key", "", "SMS provider bearer key, with --sms-api-url; never logged; prefer the env twin CGP_SMS_API_KEY, as a flag shows in the process list")
	fs.StringVar(&c.SMSFrom, "sms-from", "", "SMS sender id, with --sms-api-url: an E.164 number or 1 to 11 letters, digits or spaces (env CGP_SMS_FROM)")
	fs.IntVar(&c.ImageWorkers, "image-workers", 0, "image operations run at once; 0: 2. Background removal takes about 2 GB while it runs one picture (env CGP_IMAGE_WORKERS)")
	fs.StringVar(&c.ImageDir, "image-dir", "", "directory of the image operations' pictures; default DATA_DIR/images; servers sharing the log must share it (a shared volume) (env CGP_IMAGE_DIR)")
	fs.DurationVar(&c.ImageRetention, "image-retention", 0, "how long the results of image operations are kept; 0: 720h (30 days) (env CGP_IMAGE_RETENTION)")
	fs.StringVar(&c.ONNXRuntimeLib, "onnxruntime-lib", "", "path of ONNX Runtime's shared library for background removal (make models fetches it into .cache/models); empty: background removal is unavailable (env CGP_ONNXRUNTIME_LIB)")
	fs.StringVar(&c.BGRemoveModel, "bgremove-model", "", "path of the background-removal model isnet-small.onnx (make models fetches it into .cache/models) (env CGP_BGREMOVE_MODEL)")
	fs.StringVar(&c.SceneAPIURL, "scene-api-url", "", "scene-generation provider for lifestyle scenes, Photoroom's image-editing API such as https://image-api.photoroom.com (requests go to {url}/v2/edit); https, or http with --outbound-allow-private; empty: the embedded studio compositor (env CGP_SCENE_API_URL)")
	fs.StringVar(&c.SceneAPIKey, "scene-api-key", "", "x-api-key of --scene-api-url; never logged; prefer the env twin CGP_SCENE_API_KEY, as a flag shows in the process list")
	fs.StringVar(&c.ConciergeAPIURL, "concierge-api-url", "", "base address of the OpenAI-compatible chat-completions API the AI concierge answers through (up to and without /chat/completions, such as https://api.openai.com/v1); https, or http with --outbound-allow-private; empty: the embedded answerer (env CGP_CONCIERGE_API_URL)")
	fs.StringVar(&c.ConciergeAPIKey, "concierge-api-key", "", "bearer key of --concierge-api-url; never logged; prefer the env twin CGP_CONCIERGE_API_KEY, as a flag shows in the process list")
	fs.StringVar(&c.ConciergeModel, "concierge-model", "", "model of --concierge-api-url, such as gpt-4o-mini (env CGP_CONCIERGE_MODEL)")
	fs.StringVar(&c.PlatformAPIURL, "platform-api-url", platformapi.DefaultBaseURL, "the commerce platform's address, {shop} standing for the shop's domain: its OAuth endpoints and Admin API are reached under it; https, or http with --outbound-allow-private (env CGP_PLATFORM_API_URL)")
	fs.StringVar(&c.PlatformClientID, "platform-client-id", "", "the app's client id on the commerce platform; with --platform-client-secret it turns on /auth/install and the actions on the platform (env CGP_PLATFORM_CLIENT_ID)")
	fs.StringVar(&c.PlatformClientSecret, "platform-client-secret", "", "the app's client secret on the commerce platform (it signs the platform's redirects and webhooks); never logged; prefer the env twin CGP_PLATFORM_CLIENT_SECRET, as a flag shows in the process list")
	fs.StringSliceVar(&c.PlatformScopes, "platform-scopes", nil, "platform scopes the app requests at install, comma-separated; default: the specification's list and write_orders; installs whose grant lacks one are asked to re-consent (env CGP_PLATFORM_SCOPES)")
	fs.StringVar(&c.PlatformShopSuffix, "platform-shop-suffix", platformapi.DefaultShopSuffix, "domain every shop domain of the platform ends with; none: any valid domain (env CGP_PLATFORM_SHOP_SUFFIX)")
	fs.StringVar(&c.InstallPlan, "install-plan", string(domain.PlanStarter), "plan of a shop created by an install (env CGP_INSTALL_PLAN)")
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
