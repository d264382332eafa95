package app

// The modules' HTTP surfaces: each mount function registers one surface
// on the router with the server's stores (the module table in modules.go
// says which module each belongs to). idem is the Idempotency-Key
// middleware of writes.

import (
	"context"
	"net/http"
	"net/mail"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/adminui"
	"github.com/cgp-platform/cgp/channels/email"
	"github.com/cgp-platform/cgp/consent"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/ingest"
	"github.com/cgp-platform/cgp/ingest/marketplace"
	"github.com/cgp-platform/cgp/ingest/providers"
	"github.com/cgp-platform/cgp/ingest/whatsapp"
	"github.com/cgp-platform/cgp/openapi"
	"github.com/cgp-platform/cgp/openapi/reference"
	"github.com/cgp-platform/cgp/projections/attribution"
	"github.com/cgp-platform/cgp/projections/audit"
	"github.com/cgp-platform/cgp/projections/campaigns"
	"github.com/cgp-platform/cgp/projections/conversations"
	"github.com/cgp-platform/cgp/projections/gdprrequests"
	intelrm "github.com/cgp-platform/cgp/projections/intelligence"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/projections/marketplaces"
	"github.com/cgp-platform/cgp/projections/messaging"
	"github.com/cgp-platform/cgp/projections/tenancy"
	"github.com/cgp-platform/cgp/projections/webhooksubs"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/writeapi"
)

// Middleware wraps a handler (the Idempotency-Key middleware of writes).
type Middleware = func(http.Handler) http.Handler

// mountAPIKeys registers the tenancy's key management endpoints.
func mountAPIKeys(a *App, r *mux.Router, idem Middleware) {
	writeapi.NewAPIKeys(a.Commands, a.Auth, idem, Directory{Q: a.Tenancy}, TokenList{Q: a.Tenancy, Uses: a.Auth.LastUsed, Store: a.LastUse}, time.Now).Routes(r)
}

// mountImageKeys registers the shop's image-API key list and mint.
func mountImageKeys(a *App, r *mux.Router, idem Middleware) {
	writeapi.NewImageKeys(a.Commands, a.Auth, idem, ImageKeys{Q: a.Tenancy}, time.Now).Routes(r)
}

// mountStorefront registers the shop's storefront access settings: its
// CORS allow-list and its public keys.
func mountStorefront(a *App, r *mux.Router, idem Middleware) {
	readapi.NewStorefront(a.Tenancy, a.Auth, a.Runtime).Routes(r)
	writeapi.NewStorefront(a.Commands, a.Auth, idem, time.Now).Routes(r)
}

// mountUsage registers the usage endpoint of the image-operations keys.
func mountUsage(a *App, r *mux.Router, _ Middleware) {
	readapi.NewUsage(readapi.UsageConfig{Auth: a.Auth, Keys: ImageKeys{Q: a.Tenancy}, Uses: a.LastUse, Plans: Directory{Q: a.Tenancy},
		Tokens: Directory{Q: a.Tenancy}, Credits: readapi.DefaultAICredits(), Ledger: Directory{Q: a.Tenancy}, Now: time.Now}).Routes(r)
}

// mountCustomersRead registers the customer reads, with their as-of reads
// from the audit index.
func mountCustomersRead(a *App, r *mux.Router, _ Middleware) {
	readapi.NewCustomers(a.Customers, a.Auth, a.cursors, a.Runtime, time.Now).WithAsOf(a.asOfReader()).Routes(r)
}

// mountCustomersWrite registers the customer writes.
func mountCustomersWrite(a *App, r *mux.Router, idem Middleware) {
	writeapi.NewCustomers(a.Commands, a.Auth, idem, a.Customers, a.Runtime, time.Now).Routes(r)
}

// mountCommerceWebhooks registers the commerce platform's webhooks.
func mountCommerceWebhooks(a *App, r *mux.Router, _ Middleware) {
	in := ingest.NewCommerce(a.shops, a.Commands, a.Config.MaxWebhookBody)
	if a.Config.Test.WebhookClock != nil {
		in.WithClock(a.Config.Test.WebhookClock)
	}
	in.Routes(r)
}

// mountPixel registers the storefront pixel.
func mountPixel(a *App, r *mux.Router, _ Middleware) {
	ingest.NewPixel(a.Auth, PublicShops{Q: a.Tenancy}, a.Commands).Routes(r)
}

// mountOrders registers the order reads (the commerce platform owns
// orders: no writes).
func mountOrders(a *App, r *mux.Router, _ Middleware) {
	readapi.NewOrders(a.Commerce, a.Customers, a.Auth, a.cursors, a.Runtime).Routes(r)
}

// mountSubscriptions registers the subscription summary, behind the
// shop's grant of read_own_subscription_contracts.
func mountSubscriptions(a *App, r *mux.Router, _ Middleware) {
	readapi.NewSubscriptions(a.Commerce, a.Tenancy, a.Auth, a.Runtime, a.Platform.Reauthorize, time.Now).Routes(r)
}

// mountCatalog registers the catalog endpoints.
func mountCatalog(a *App, r *mux.Router, idem Middleware) {
	readapi.NewCatalog(a.Commerce, a.Auth, a.cursors, a.Runtime).Routes(r)
	writeapi.NewCatalog(a.Commands, a.Auth, idem, a.Commerce, a.Runtime, platformActions{p: a.Platform, tenancy: a.Tenancy}).Routes(r)
}

// mountMessaging registers the messaging receivers: the messaging platform
// at /webhooks/whatsapp and the providers' callbacks at
// /webhooks/providers/{provider}.
func mountMessaging(a *App, r *mux.Router, _ Middleware) {
	q := messaging.NewQueries(a.Store.DB())
	whatsapp.NewReceiver(WhatsAppAccounts{Q: q, Codec: a.Codec}, a.Commands, a.Config.MaxWebhookBody).WithGuard(a.Auth).Routes(r)
	providers.NewReceiver(ProviderConnections{Q: q}, a.Commands, a.Config.MaxWebhookBody).WithGuard(a.Auth).Routes(r)
}

// mountMarketplaces registers the marketplaces' webhooks.
func mountMarketplaces(a *App, r *mux.Router, _ Middleware) {
	conns := MarketplaceConnections{Q: marketplaces.NewQueries(a.Store.DB()), Codec: a.Codec}
	marketplace.NewReceiver(conns, a.Commands, a.Config.MaxWebhookBody, time.Now).Routes(r)
}

// mountCampaigns registers the campaigns endpoints.
func mountCampaigns(a *App, r *mux.Router, idem Middleware) {
	q := campaigns.NewQueries(a.Store.DB())
	counts := messaging.NewQueries(a.Store.DB())
	readapi.NewCampaigns(q, a.Customers, counts, a.Auth, a.cursors, a.Runtime, time.Now).Routes(r)
	writeapi.NewCampaigns(a.Commands, a.Auth, idem, q, TemplateApprovals{Q: counts, Customers: a.Customers, SMTP: a.Config.SMTPAddr != ""},
		counts, a.Runtime).Routes(r)
}

// mountJourneys registers the journeys endpoints.
func mountJourneys(a *App, r *mux.Router, idem Middleware) {
	q := journeys.NewQueries(a.Store.DB())
	readapi.NewJourneys(q, a.Customers, a.Auth, a.cursors, a.Runtime).Routes(r)
	writeapi.NewJourneys(a.Commands, a.Auth, idem, q, a.Runtime).Routes(r)
}

// mountFlows registers the built-in flows' settings endpoints (read from
// the journeys read model).
func mountFlows(a *App, r *mux.Router, idem Middleware) {
	readapi.NewFlows(journeys.NewQueries(a.Store.DB()), a.Auth, a.Runtime).Routes(r)
	writeapi.NewFlows(a.Commands, a.Auth, idem).Routes(r)
}

// mountWebhooks registers the webhook subscription endpoints and the
// event-type catalogue (the deliveries' endpoints are the delivery
// side's).
func mountWebhooks(a *App, r *mux.Router, idem Middleware) {
	q := webhooksubs.NewQueries(a.Store.DB())
	readapi.NewWebhooks(q, a.Auth, a.cursors, a.Runtime).Routes(r)
	writeapi.NewWebhooks(a.Commands, a.Auth, idem, q, a.Runtime, a.Config.OutboundAllowPrivate).Routes(r)
}

// mountConversations registers the conversation reads and writes (the
// inbox of the customers' WhatsApp conversations).
func mountConversations(a *App, r *mux.Router, idem Middleware) {
	q := conversations.NewQueries(a.Store.DB())
	readapi.NewConversations(q, a.Auth, a.cursors, a.Runtime).Routes(r)
	writeapi.NewConversations(a.Commands, a.Auth, idem, q, a.Runtime).Routes(r)
}

// mountIntelligence registers the intelligence reads (keywords come from
// `cgp seo import`, runs from `cgp di run` and the daily schedule).
func mountIntelligence(a *App, r *mux.Router, _ Middleware) {
	readapi.NewIntelligence(intelrm.NewQueries(a.Store.DB()), a.Auth, a.cursors, a.Runtime).Routes(r)
}

// mountThemeIncidents registers the theme regression incident view: the
// main theme's changes (commerce read model) against the imported rankings,
// and whether the shop's grant lets theme changes arrive (the
// re-authorisation link when not).
func mountThemeIncidents(a *App, r *mux.Router, _ Middleware) {
	readapi.NewThemeIncidents(readapi.ThemeIncidentsConfig{Commerce: a.Commerce, Intelligence: intelrm.NewQueries(a.Store.DB()),
		Tenancy: a.Tenancy, Auth: a.Auth, Cursors: a.cursors, Wait: a.Runtime, Reauthorize: a.Platform.Reauthorize}).Routes(r)
}

// mountAttribution registers the attribution reads; the summary comes
// from the warehouse when it can answer (attributionSummary).
func mountAttribution(a *App, r *mux.Router, _ Middleware) {
	q := attribution.NewQueries(a.Store.DB())
	readapi.NewAttribution(q, a.Auth, a.cursors, a.Runtime).WithSummary(a.attributionSummary(q)).Routes(r)
}

// mountAttributionSettings registers the attribution settings read.
func mountAttributionSettings(a *App, r *mux.Router, _ Middleware) {
	readapi.NewAttributionSettings(attribution.NewQueries(a.Store.DB()), a.Auth, a.Runtime).Routes(r)
}

// mountAudit registers the audit history endpoints (beta).
func mountAudit(a *App, r *mux.Router, _ Middleware) {
	readapi.NewAudit(audit.NewQueries(a.Store.DB()), a.Log, a.Codec, a.Auth, a.cursors, a.Runtime, a.auditCheckpoint).Routes(r)
}

// auditCheckpoint is how far the audit index has folded the log: the
// runtime's checkpoint, or the stored one before the runtime has loaded it
// (right after a start; 0 there would make verify fall back to reading the
// whole log, which cannot see an event deleted from a stream of one).
func (a *App) auditCheckpoint() eventlog.Position {
	if cp, ok := a.Runtime.Checkpoints()[audit.Name]; ok {
		return cp
	}
	cp, err := a.Store.Checkpoint(context.Background(), audit.Name)
	if err != nil {
		return 0
	}
	return cp
}

// asOfReader is the as-of reader of the customer read.
func (a *App) asOfReader() *readapi.AsOf {
	return readapi.NewAsOf(audit.NewQueries(a.Store.DB()), a.Log, a.Codec, a.Runtime, time.Now)
}

// mountGDPR registers GET /api/v1/gdpr-requests.
func mountGDPR(a *App, r *mux.Router, _ Middleware) {
	readapi.NewGDPRRequests(gdprrequests.NewQueries(a.Store.DB()), a.Auth, a.cursors, a.Runtime).Routes(r)
}

// mountOps registers /healthz, /readyz and /metrics.
func mountOps(a *App, r *mux.Router, _ Middleware) {
	httpapi.RegisterOps(r, a.checks, a.Registry)
}

// mountOpenAPI registers the API description.
func mountOpenAPI(_ *App, r *mux.Router, _ Middleware) {
	httpapi.Handle(r, httpapi.Beta, http.MethodGet, "/api/v1/openapi.json", httpapi.Compressed(openapi.Handler()))
}

// mountReference registers the API reference generated from the OpenAPI
// document (GET /docs, its assets) and the landing page (GET /). The
// reference is rendered at its first request, not at start.
func mountReference(_ *App, r *mux.Router, _ Middleware) {
	site := reference.New(openapi.YAML())
	docs := httpapi.Compressed(site.Docs())
	httpapi.Handle(r, httpapi.Beta, http.MethodGet, "/", site.Landing())
	httpapi.Handle(r, httpapi.Beta, http.MethodGet, "/docs", docs)
	httpapi.Handle(r, httpapi.Beta, http.MethodGet, "/docs/", site.Redirect())
	httpapi.Handle(r, httpapi.Beta, http.MethodGet, "/docs/assets/{name}", httpapi.Compressed(site.Assets()))
}

// UnsubscribeLinks makes and reads the unsubscribe links of marketing
// messages (for the sending engine): signed with a key derived from the
// server's key material for this purpose only, under the public base
// address (Config.PublicBaseURL).
func (a *App) UnsubscribeLinks() consent.Links {
	return consent.Links{Key: deriveKey(a.CursorKey, "cgp unsubscribe links v1"), BaseURL: a.Config.PublicBaseURL()}
}

// mountUnsubscribe registers the public unsubscribe routes.
func mountUnsubscribe(a *App, r *mux.Router, _ Middleware) {
	links := a.UnsubscribeLinks()
	if a.Config.Test.OnUnsubscribeLinks != nil {
		a.Config.Test.OnUnsubscribeLinks(links)
	}
	consent.NewUnsubscribe(links, a.Commands, time.Now).Routes(r)
}

// mountAdminUI registers the admin interface's HTML pages under /admin
// (sign-in, sessions, the account's shops). Its session cookie is Secure
// when the public URL is https.
func mountAdminUI(a *App, r *mux.Router, _ Middleware) {
	catchUpTo := func(ctx context.Context, pos uint64) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return a.Runtime.WaitFor(ctx, eventlog.Position(pos), tenancy.Name)
	}
	adminui.New(adminui.Config{Tenancy: a.Tenancy, Sessions: a.Sessions, Guard: a.Auth, API: r, Commands: a.Commands,
		Mail: invitationMailer(a.Config), BaseURL: a.Config.PublicURL, CatchUpTo: catchUpTo,
		Secure: strings.HasPrefix(a.Config.PublicURL, "https://"),
		CatchUp: func(ctx context.Context) error {
			head, err := a.Log.HeadPosition(ctx)
			if err != nil {
				return err
			}
			return catchUpTo(ctx, uint64(head))
		}}).Routes(r)
}

// invitationMailer mails the admin interface's invitations through the
// SMTP relay (nil without one).
func invitationMailer(cfg Config) adminui.Mailer {
	if cfg.SMTPAddr == "" {
		return nil
	}
	from, err := mail.ParseAddress(cfg.SMTPFrom) // validated by Config.Validate
	if err != nil {
		return nil
	}
	sender := &email.Sender{Addr: cfg.SMTPAddr, Username: cfg.SMTPUsername, Password: cfg.SMTPPassword, TLSConfig: cfg.Test.ExportSMTPTLS}
	return func(ctx context.Context, to, subject, text string) error {
		_, err := sender.Send(ctx, email.Message{From: *from, To: mail.Address{Address: to}, Subject: subject, Text: text, Date: time.Now()})
		return err
	}
}
