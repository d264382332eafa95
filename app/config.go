package app

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/mail"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/channels/sms"
	"github.com/cgp-platform/cgp/channels/whatsapp"
	"github.com/cgp-platform/cgp/concierge"
	"github.com/cgp-platform/cgp/concierge/openai"
	"github.com/cgp-platform/cgp/consent"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/intelligence"
	"github.com/cgp-platform/cgp/projections/conciergereplies"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
	"github.com/cgp-platform/cgp/replay"
)

// Warehouse adapters (Config.Warehouse).
const (
	WarehouseNone       = "none"
	WarehouseSQLite     = "sqlite"
	WarehouseClickHouse = "clickhouse"
)

// Config is the service's configuration. cmd/cgp fills it once from flags
// and their CGP_… environment twins (a flag given on the command line
// wins); the end-to-end tests build it directly.
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
	// EventLog selects the event-log adapter: sqlite, postgres or esdb.
	EventLog string
	// PostgresLogURL is the event log's PostgreSQL connection string, for
	// EventLog=postgres.
	PostgresLogURL string
	// ESDBURL is the EventStoreDB connection string, for EventLog=esdb.
	ESDBURL string
	// Vault selects the key-vault adapter: sqlite or postgres.
	Vault string
	// PostgresURL is the PostgreSQL DSN, for Vault=postgres.
	PostgresURL string
	// RedisURL, when set, keeps rate-limit and brute-force counters and
	// idempotency records in Redis (shared by several servers).
	RedisURL string
	// LeasePostgresURL, when set, is the PostgreSQL DSN of the leases
	// that let one server at a time run each job performing side effects
	// (OnOneServer), another taking over when that one dies; every server
	// sharing the log must name the same database. Empty: the in-process
	// lease, right for a single server. A secret (it may hold a
	// password): never logged.
	LeasePostgresURL string
	// LeaseNamespace is hashed into every lease's lock key: the servers
	// sharing one event log use the same, deployments sharing one
	// PostgreSQL database (staging and production) different ones.
	// Empty: "cgp".
	LeaseNamespace string
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
	// InitialBuildEvents: a server started without any read-model version
	// on a log of at least this many events builds its read models the
	// way `cgp replay` does (every core, deferred indexes) before its
	// projections follow the log; meanwhile it answers 503 (NeedsInitialBuild).
	// Zero: never (the projections fold the whole log live).
	InitialBuildEvents int64
	// ReadModelNoSync never fsyncs the read-model store (rmsqlite.Config.NoSync).
	ReadModelNoSync bool
	// DebugAddr, when set, serves net/http/pprof on its own listener
	// (keep it on loopback).
	DebugAddr string
	// DIDailyAt is the UTC time of day (HH:MM) of the daily
	// decision-intelligence run of every installed shop; "off" or empty:
	// no daily run (jobs.go).
	DIDailyAt string
	// Warehouse selects where customers, attribution and touchpoints are
	// shipped for analysts: none, sqlite (DATA_DIR/warehouse.db) or
	// clickhouse (WarehouseURL).
	Warehouse string
	// WarehouseURL is the ClickHouse URL, for Warehouse=clickhouse. A
	// secret: never logged.
	WarehouseURL string
	// MessageReconcileWindow is how long a WhatsApp message left in
	// doubt by a crash waits for its status webhook before it is sent
	// again (0: 10 minutes).
	MessageReconcileWindow time.Duration
	// OperatorEmail receives the operator's alerts (brute force); empty:
	// they are only in the log and the audit history.
	OperatorEmail string
	// NotifyChatTemplate and NotifyChatLanguage are the WhatsApp template
	// (approved on the shop's account) of the merchant's chat
	// notifications, its body taking the alert's title and the shop's
	// domain.
	NotifyChatTemplate, NotifyChatLanguage string
	// SMTPAddr is the SMTP relay (host:port) data exports are mailed
	// through; empty: no e-mail (jobs.go).
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
	// WhatsAppAPIURL is the WhatsApp Cloud API's base address with its
	// version, messages being posted to {WhatsAppAPIURL}/{phone-number-id}/messages;
	// empty means whatsapp.DefaultBaseURL. https, or http with
	// OutboundAllowPrivate (tests serve the API's contract from httptest).
	WhatsAppAPIURL string
	// PublicURL is the service's public base address (scheme, host, an
	// optional path), the start of the links it puts in messages
	// (unsubscribe links). Empty means http://{Addr}, right for a
	// service on one machine only.
	PublicURL string
	// SMSAPIURL is the SMS provider's base address, messages being
	// posted to {SMSAPIURL}/v1/messages (the generic contract of
	// channels/sms); empty: no SMS. https, or http with
	// OutboundAllowPrivate (tests serve the contract from httptest).
	SMSAPIURL string
	// SMSAPIKey is the provider's bearer key, required with SMSAPIURL. A
	// secret: never logged nor echoed by Validate.
	SMSAPIKey string
	// SMSFrom is the sender id, required with SMSAPIURL: an E.164
	// number or 1 to 11 letters, digits or spaces (sms.ValidSender).
	SMSFrom string
	// ConciergeAPIURL is the base address (up to and without
	// /chat/completions) of the OpenAI-compatible chat-completions API the
	// AI concierge answers through; empty: the embedded answerer. https,
	// or http with OutboundAllowPrivate (tests serve the contract from
	// httptest).
	ConciergeAPIURL string
	// ConciergeAPIKey is that API's bearer key, required with
	// ConciergeAPIURL. A secret: never logged nor echoed by Validate.
	ConciergeAPIKey string
	// ConciergeModel is the model asked, required with ConciergeAPIURL.
	ConciergeModel string
	// ImageWorkers is the number of image operations run at once (the
	// image workers' pool); runner.DefaultWorkers when zero.
	ImageWorkers int
	// ImageDir is the image operations' object store (their pictures);
	// "": DATA_DIR/images. Servers sharing the log share it (a shared
	// volume): an operation uploaded to one is run by the server holding
	// the image_operations lease, and its result is read from any.
	ImageDir string
	// ImageRetention is how long image operations' results (and inputs
	// left behind) are kept; store.DefaultRetention when zero.
	ImageRetention time.Duration
	// ONNXRuntimeLib and BGRemoveModel are the paths of ONNX Runtime's
	// shared library and of the background-removal model (make models
	// fetches both); empty or missing: background removal is unavailable
	// (503) and lifestyle scenes need pictures already cut out.
	ONNXRuntimeLib string
	BGRemoveModel  string
	// SceneAPIURL is the scene-generation provider's base address
	// (Photoroom's image-editing API; requests go to {url}/v2/edit);
	// empty: lifestyle scenes are composited by the embedded studio.
	SceneAPIURL string
	// SceneAPIKey is the provider's key, required with SceneAPIURL. A
	// secret: never logged nor echoed by Validate.
	SceneAPIKey string
	// PlatformAPIURL is the commerce platform's address, "{shop}"
	// standing for the shop's domain (platformapi.DefaultBaseURL when
	// empty); https, or http with OutboundAllowPrivate (tests serve the
	// platform's OAuth and Admin API contract from httptest).
	PlatformAPIURL string
	// PlatformClientID and PlatformClientSecret are the app's credentials
	// on the platform; empty: the install flow answers 404 and nothing
	// acts on the platform. The secret is never logged nor echoed.
	PlatformClientID, PlatformClientSecret string
	// PlatformScopes are the platform scopes the app declares (requests at
	// install); empty: domain.DeclaredPlatformScopes. Installs whose
	// implied grant lacks one need re-consent.
	PlatformScopes []string
	// PlatformShopSuffix is the domain every shop domain of the platform
	// ends with (platformapi.DefaultShopSuffix when empty; "none": any).
	PlatformShopSuffix string
	// InstallPlan is the plan of a shop created by an install (starter
	// when empty).
	InstallPlan string
	// Test holds the hooks the end-to-end tests set; zero in production.
	Test TestHooks
}

// TestHooks are the clocks, periods and TLS settings the end-to-end tests
// of cmd/cgp replace (no flag sets them). The zero value is production.
type TestHooks struct {
	// DIClock is the daily decision-intelligence schedule's clock
	// (time.Now when nil).
	DIClock func() time.Time
	// VersionPoll is how often cgp serve checks which read-model version
	// is live (a replay switches it); DefaultVersionPoll when zero.
	VersionPoll time.Duration
	// GuardNow is the brute-force guard's clock; nil: the real one.
	GuardNow func() time.Time
	// SessionNow is the admin sessions' clock (their expiries); nil: the
	// real one.
	SessionNow func() time.Time
	// OutboundTLS, when set, is the TLS configuration of outbound
	// connections (tests trust their TLS server with it); ExportSMTPTLS is
	// the STARTTLS configuration of the export mails.
	OutboundTLS, ExportSMTPTLS *tls.Config
	// ExportRetry is the first retry delay of a data export
	// (domain.ExportRetryBase when zero) and ExportPoll how often due
	// retries are looked for (DefaultExportPoll when zero).
	ExportRetry, ExportPoll time.Duration
	// RetentionEvery is how often the retention countdown runs
	// (DefaultRetentionEvery when zero); RetentionClock is its clock
	// (time.Now when nil).
	RetentionEvery time.Duration
	RetentionClock func() time.Time
	// WebhookClock is the commerce receiver's clock for the triggered-at
	// window of destructive topics (time.Now when nil).
	WebhookClock func() time.Time
	// PlatformClock is the clock of the platform client and the sessions
	// (redirect timestamps, token expiry).
	PlatformClock func() time.Time
	// Listening, when set, is given the server's address as soon as it
	// listens (before a first start's build).
	Listening func(addr string)
	// InitialBuildStarted, when set, is called when a first start begins
	// building the read models (BuildReadModels), while the server
	// answers 503.
	InitialBuildStarted func()
	// OnUnsubscribeLinks, when set, is given the server's unsubscribe
	// links (App.UnsubscribeLinks) when its routes are mounted, so a test
	// can make the links a message would carry.
	OnUnsubscribeLinks func(consent.Links)
	// OnEventLog, when set, is given the event log once it is open.
	OnEventLog func(eventlog.Log)
	// OutboundWebhooks tunes the outbound webhooks' dispatcher: its
	// retry schedule, attempt timeout (through the sender), auto-disable
	// period and clock (zero: production's).
	OutboundWebhooks OutboundWebhookHooks
	// Sending tunes the message dispatcher: its retry schedule, doubt
	// window, send timeout and clock (zero: production's).
	Sending SendingHooks
	// Notify tunes the notifier: its retry schedule and clock.
	Notify NotifyHooks
	// Lease tunes the PostgreSQL leases (LeasePostgresURL).
	Lease LeaseHooks
}

// LeaseHooks are the PostgreSQL leases' test settings: quick polls and
// checks, and a short settle (zero: production's).
type LeaseHooks struct {
	Poll, Check, Settle time.Duration
}

// OutboundWebhookHooks are the outbound webhooks' test settings.
type OutboundWebhookHooks struct {
	Schedule     []time.Duration
	Timeout      time.Duration
	DisableAfter time.Duration
	Now          func() time.Time
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
	case "postgres":
		if c.PostgresLogURL == "" {
			errs = append(errs, errors.New("postgres-log-url is required with event-log postgres"))
		}
	default:
		errs = append(errs, fmt.Errorf("event-log %q: want sqlite, postgres or esdb", c.EventLog))
	}
	switch c.Warehouse {
	case "", WarehouseNone, WarehouseSQLite:
	case WarehouseClickHouse:
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
	if c.InitialBuildEvents < 0 {
		errs = append(errs, errors.New("initial-build-events must not be negative"))
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
	if c.OperatorEmail != "" {
		if a, err := mail.ParseAddress(c.OperatorEmail); err != nil || a.Name != "" {
			errs = append(errs, errors.New("operator-email must be a plain e-mail address"))
		}
	}
	if _, _, err := intelligence.ParseDailyAt(c.DIDailyAt); err != nil {
		errs = append(errs, fmt.Errorf("di-daily-at: %w", err))
	}
	if c.MessageReconcileWindow < 0 {
		errs = append(errs, errors.New("message-reconcile-window must not be negative"))
	}
	if err := validAPIURL(c.WhatsAppAPIURL, c.OutboundAllowPrivate); err != nil {
		errs = append(errs, fmt.Errorf("whatsapp-api-url: %w", err))
	}
	if err := validPublicURL(c.PublicURL); err != nil {
		errs = append(errs, fmt.Errorf("public-url: %w", err))
	}
	errs = append(errs, c.validateSMS()...)
	errs = append(errs, c.validateConcierge()...)
	errs = append(errs, c.validateImages()...)
	errs = append(errs, c.validatePlatform()...)
	return errors.Join(errs...)
}

// PublicBaseURL is the service's public base address without a final
// slash: PublicURL, or http://{Addr} when it is empty.
func (c *Config) PublicBaseURL() string {
	if c.PublicURL == "" {
		return "http://" + c.Addr
	}
	return strings.TrimRight(c.PublicURL, "/")
}

// validPublicURL checks the public base address: empty, or an absolute
// http or https URL with a host and neither user info, query nor
// fragment.
func validPublicURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return errors.New("want an absolute http or https URL such as https://cgp.example.com")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("want a base URL without user info, query or fragment")
	}
	return nil
}

// validateSMS checks the SMS provider's settings: none, or all three.
// Neither the key nor the URL is echoed.
func (c *Config) validateSMS() []error {
	if c.SMSAPIURL == "" {
		if c.SMSAPIKey != "" || c.SMSFrom != "" {
			return []error{errors.New("sms-api-url is required with sms-api-key or sms-from")}
		}
		return nil
	}
	var errs []error
	if err := validAPIURL(c.SMSAPIURL, c.OutboundAllowPrivate); err != nil {
		errs = append(errs, fmt.Errorf("sms-api-url: %w", err))
	}
	if c.SMSAPIKey == "" {
		errs = append(errs, errors.New("sms-api-key is required with sms-api-url"))
	} else if strings.ContainsFunc(c.SMSAPIKey, func(r rune) bool { return r <= ' ' || r > '~' }) {
		errs = append(errs, errors.New("sms-api-key must be printable ASCII without spaces"))
	}
	if !sms.ValidSender(c.SMSFrom) {
		errs = append(errs, errors.New("sms-from must be an E.164 number or 1 to 11 letters, digits or spaces, not all digits, with sms-api-url"))
	}
	return errs
}

// OutboundClient is the HTTP client of an outside API (a provider's): it
// follows no redirect, and uses the tests' TLS settings when set.
func (c *Config) OutboundClient() *http.Client {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if c.Test.OutboundTLS != nil {
		hc.Transport = &http.Transport{TLSClientConfig: c.Test.OutboundTLS.Clone(), Proxy: http.ProxyFromEnvironment}
	}
	return hc
}

// validateImages checks the image operations' settings.
func (c *Config) validateImages() []error {
	var errs []error
	if c.ImageWorkers < 0 || c.ImageWorkers > 64 {
		errs = append(errs, errors.New("image-workers must be from 0 (the default) to 64"))
	}
	if c.ImageRetention < 0 {
		errs = append(errs, errors.New("image-retention must not be negative"))
	}
	if c.SceneAPIURL == "" {
		if c.SceneAPIKey != "" {
			errs = append(errs, errors.New("scene-api-url is required with scene-api-key"))
		}
		return errs
	}
	if err := validAPIURL(c.SceneAPIURL, c.OutboundAllowPrivate); err != nil {
		errs = append(errs, fmt.Errorf("scene-api-url: %w", err))
	}
	if c.SceneAPIKey == "" {
		errs = append(errs, errors.New("scene-api-key is required with scene-api-url"))
	}
	return errs
}

// validatePlatform checks the commerce platform's settings: both
// credentials or neither, an API address, scopes of the platform's form, a
// known plan. Neither the secret nor the URL is echoed.
func (c *Config) validatePlatform() []error {
	var errs []error
	if (c.PlatformClientID == "") != (c.PlatformClientSecret == "") {
		errs = append(errs, errors.New("platform-client-id and platform-client-secret go together"))
	}
	if c.PlatformClientSecret != "" && (len(c.PlatformClientSecret) < 16 || len(c.PlatformClientSecret) > 256) {
		errs = append(errs, errors.New("platform-client-secret must be 16 to 256 characters (the platform signs webhooks with it)"))
	}
	if c.PlatformAPIURL != "" {
		probe := strings.ReplaceAll(c.PlatformAPIURL, "{shop}", "shop.example.com")
		if err := validAPIURL(probe, c.OutboundAllowPrivate); err != nil {
			errs = append(errs, fmt.Errorf("platform-api-url: %w", err))
		}
	}
	for _, s := range c.PlatformScopes {
		if !domain.ValidPlatformScope(s) {
			errs = append(errs, fmt.Errorf("platform-scopes: %q is not a platform scope (read_X or write_X)", s))
		}
	}
	if c.InstallPlan != "" {
		if _, err := domain.ParsePlan(c.InstallPlan); err != nil {
			errs = append(errs, fmt.Errorf("install-plan: %w", err))
		}
	}
	return errs
}

// DeclaredPlatformScopes are the scopes the app requests at install.
func (c *Config) DeclaredPlatformScopes() []string {
	if len(c.PlatformScopes) == 0 {
		return domain.DeclaredPlatformScopes()
	}
	return c.PlatformScopes
}

// validateConcierge checks the concierge provider's settings: none, or
// URL, key and model. Neither the key nor the URL is echoed.
func (c *Config) validateConcierge() []error {
	if c.ConciergeAPIURL == "" {
		if c.ConciergeAPIKey != "" || c.ConciergeModel != "" {
			return []error{errors.New("concierge-api-url is required with concierge-api-key or concierge-model")}
		}
		return nil
	}
	var errs []error
	if err := validAPIURL(c.ConciergeAPIURL, c.OutboundAllowPrivate); err != nil {
		errs = append(errs, fmt.Errorf("concierge-api-url: %w", err))
	}
	if c.ConciergeAPIKey == "" {
		errs = append(errs, errors.New("concierge-api-key is required with concierge-api-url"))
	} else if strings.ContainsFunc(c.ConciergeAPIKey, func(r rune) bool { return r <= ' ' || r > '~' }) {
		errs = append(errs, errors.New("concierge-api-key must be printable ASCII without spaces"))
	}
	if strings.TrimSpace(c.ConciergeModel) == "" {
		errs = append(errs, errors.New("concierge-model is required with concierge-api-url"))
	}
	return errs
}

// ConciergeAnswerer returns the AI concierge's answerer and its name: the
// OpenAI-compatible adapter when ConciergeAPIURL is set (its requests over
// the outbound TLS settings, bounded by the reactor's AnswerTimeout),
// the embedded answerer otherwise.
func (c *Config) ConciergeAnswerer() (concierge.Answerer, string, error) {
	if c.ConciergeAPIURL == "" {
		return concierge.NewEmbedded(), "embedded", nil
	}
	hc := c.OutboundClient()
	cl, err := openai.New(openai.Config{BaseURL: c.ConciergeAPIURL, APIKey: c.ConciergeAPIKey, Model: c.ConciergeModel, HTTP: hc,
		Timeout: conciergereplies.AnswerTimeout})
	if err != nil {
		return nil, "", fmt.Errorf("concierge: %w", err)
	}
	return cl, "openai", nil
}

// SMSClient returns the client of the configured SMS provider, nil when
// SMSAPIURL is empty (no SMS). Its requests go over the outbound TLS
// settings (tests trust their TLS server with Test.OutboundTLS).
func (c *Config) SMSClient() (*sms.Client, error) {
	if c.SMSAPIURL == "" {
		return nil, nil
	}
	hc := c.OutboundClient()
	cl, err := sms.New(sms.Config{BaseURL: c.SMSAPIURL, APIKey: c.SMSAPIKey, From: c.SMSFrom, HTTP: hc})
	if err != nil {
		return nil, fmt.Errorf("sms: %w", err)
	}
	return cl, nil
}

// WhatsAppBaseURL is the WhatsApp Cloud API address to send through:
// WhatsAppAPIURL, or whatsapp.DefaultBaseURL when it is empty.
func (c *Config) WhatsAppBaseURL() string {
	if c.WhatsAppAPIURL == "" {
		return whatsapp.DefaultBaseURL
	}
	return c.WhatsAppAPIURL
}

// validAPIURL checks a provider API's base address: empty (the default),
// or an absolute https URL with a host and neither user info, query nor
// fragment; plain http only when allowPrivate (self-hosting, tests). The
// value itself is not echoed: a mistyped one may hold a credential.
func validAPIURL(raw string, allowPrivate bool) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" || strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r >= 0x7f }):
		return errors.New("want an absolute URL such as " + whatsapp.DefaultBaseURL)
	case u.Scheme == "http" && !allowPrivate:
		return errors.New("http only with outbound-allow-private; want https")
	case u.Scheme != "https" && u.Scheme != "http":
		return errors.New("want an https URL")
	case u.User != nil:
		return errors.New("no user info: the access token authenticates")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return errors.New("no query or fragment: paths are appended to it")
	}
	return nil
}

// Path is the file name in the data directory.
func (c *Config) Path(name string) string { return filepath.Join(c.DataDir, name) }

// EnsureDataDir creates the data directory, the owner's only.
func (c *Config) EnsureDataDir() error {
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

// ReadModelPath is the live read-model version of the data directory.
func (c *Config) ReadModelPath() (string, error) { return replay.Current(c.DataDir) }

// OpenReadModels opens the live read-model version of the data directory,
// for a one-shot command.
func (c *Config) OpenReadModels() (*rmsqlite.Store, error) {
	path, err := c.ReadModelPath()
	if err != nil {
		return nil, err
	}
	store, err := rmsqlite.Open(rmsqlite.Config{Path: path})
	if err != nil {
		return nil, fmt.Errorf("open read models: %w", err)
	}
	return store, nil
}
