// Package app is the application's home: the module table (every bounded
// context with its projectors, reactors, HTTP routes, background jobs and
// CLI commands), the server that the table wires (OpenApp mounts every
// module's routes, Serve runs every module's jobs under one Supervisor),
// the reactors' commands and the CLI's command bodies. cmd/cgp parses
// flags into Config, chooses the adapters (Adapters) and handles signals.
package app

import (
	"context"
	"fmt"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/concierge"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/attribution"
	"github.com/cgp-platform/cgp/projections/audit"
	"github.com/cgp-platform/cgp/projections/campaigns"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/conciergereplies"
	"github.com/cgp-platform/cgp/projections/consentreplies"
	"github.com/cgp-platform/cgp/projections/conversations"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/projections/enrollment"
	"github.com/cgp-platform/cgp/projections/erasure"
	"github.com/cgp-platform/cgp/projections/gdprrequests"
	"github.com/cgp-platform/cgp/projections/imageops"
	"github.com/cgp-platform/cgp/projections/intelligence"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/projections/marketplaces"
	"github.com/cgp-platform/cgp/projections/messaging"
	"github.com/cgp-platform/cgp/projections/notifications"
	"github.com/cgp-platform/cgp/projections/reviews"
	"github.com/cgp-platform/cgp/projections/templateholds"
	"github.com/cgp-platform/cgp/projections/tenancy"
	"github.com/cgp-platform/cgp/projections/webhooksubs"
	"github.com/cgp-platform/cgp/vault"
)

// Module is one bounded context of the service.
type Module struct {
	Name string
	// Projectors fold read models from the log and issue no command;
	// `cgp replay` rebuilds them.
	Projectors func(d Deps) []projections.Projector
	// Reactors consume committed events with their own checkpoint and
	// issue commands or side effects, idempotent by deterministic ids; a
	// failure is retried with backoff, then parked with its reason
	// (projections.Runtime). `cgp replay` never runs one: it copies their
	// tables and checkpoints as they are.
	Reactors func(d Deps) []projections.Projector
	// Routes are the HTTP surfaces the module registers: OpenApp mounts
	// every module's routes, in table order, on one router.
	Routes []Route
	// Jobs are the module's background jobs: Serve runs every module's
	// jobs under one Supervisor, each where its Runs says.
	Jobs []BackgroundJob
	// Commands are the module's CLI commands, as paths of the cobra tree
	// of cmd/cgp ("shops attribution" is the attribution subcommand of
	// the tenancy's "shops"); cmd/cgp parses them, and a test there checks
	// that every top-level command is listed by exactly one module and
	// every name listed exists.
	Commands []string
}

// Route is one HTTP surface of a module.
type Route struct {
	// Name names the surface in the module table (the handler's package
	// and type).
	Name string
	// Mount registers the surface's endpoints on r with the server's
	// stores; idem is the Idempotency-Key middleware of writes.
	Mount func(a *App, r *mux.Router, idem Middleware)
}

// BackgroundJob is one background job of a module.
type BackgroundJob struct {
	// Name is stable and short: it names the job in logs and errors.
	Name string
	// Build returns the job's run function for this server (see Job), or
	// nil when the configuration turns the job off.
	Build func(a *App) func(ctx context.Context) error
	// Runs says where the job runs when several servers share the log.
	Runs Runs
}

// Runs is where a background job runs when several servers share one
// event log.
type Runs int

const (
	// OnEveryServer: the job's work is the server's own (its read models
	// and files, its in-process queues), or only issues commands that the
	// log makes idempotent.
	OnEveryServer Runs = iota
	// OnOneServer: the job performs side effects outside the log
	// (sending, delivering, notifying, calling a provider or the
	// platform), so it runs on one server at a time, under the lease
	// named "job/" + its name (Config.LeasePostgresURL), and on another
	// when that server dies (Serve, OneAtATime).
	OnOneServer
)

// Deps are what the modules' projectors and reactors are built from.
type Deps struct {
	Codec *envelope.Codec
	// Commands issue the reactors' commands. Nil: nothing issues a
	// command.
	Commands *commands.Handler
	// TenancyChanged is called after each change of the tenancy read
	// model (caches drop). Optional.
	TenancyChanged func()
	// ExportRequested wakes the data exporter on a new data request.
	// Optional.
	ExportRequested func()
	// Vault shreds the erased customers' keys (the process's cache, so no
	// cached key survives).
	Vault vault.Vault
	// ShopErasure handles the shop-erasure reactor's events.
	ShopErasure projections.DecodedHandler
	// Answerer answers the AI concierge's questions (nil: the concierge
	// reactor only folds its tables); AnswererName names it.
	Answerer     concierge.Answerer
	AnswererName string
	// ImagesChanged is called after each committed event of an image
	// operation (workers and Prefer: wait wake). Optional.
	ImagesChanged func()
	// ConciergeAnswers is the concierge's answering job (the reactor
	// queues the messages it answers). Nil: none.
	ConciergeAnswers *conciergereplies.Answers
}

// Modules is the module table: every bounded context of the service, in
// the order its projectors and reactors are registered.
func Modules() []Module {
	return []Module{{
		Name:       "tenancy",
		Projectors: func(d Deps) []projections.Projector { return one(tenancy.Projector(d.Codec, d.TenancyChanged)) },
		Routes: []Route{{"writeapi.APIKeys", mountAPIKeys}, {"writeapi.ImageKeys", mountImageKeys}, {"readapi.Usage", mountUsage},
			{"readapi.Storefront, writeapi.Storefront", mountStorefront}},
		Jobs: []BackgroundJob{{"token_last_use", tokenLastUseJob, OnEveryServer}, {"retention", retentionJob, OnEveryServer}},
		Commands: []string{"accounts", "shops", "tokens", "public-keys", "image-keys", "shops retention", "shops reinstall", "shops credits",
			"shops origins"},
	}, {
		Name:       "customers",
		Projectors: func(d Deps) []projections.Projector { return one(customers.Projector(d.Codec, nil)) },
		Reactors:   func(d Deps) []projections.Projector { return one(consentreplies.Reactor(d.Codec, recordConsent(d))) },
		Routes: []Route{{"readapi.Customers", mountCustomersRead}, {"writeapi.Customers", mountCustomersWrite},
			{"ingest.Commerce", mountCommerceWebhooks}, {"ingest.Pixel", mountPixel}, {"consent.Unsubscribe", mountUnsubscribe}},
	}, {
		Name:       "commerce",
		Projectors: func(d Deps) []projections.Projector { return one(commerce.Projector(d.Codec)) },
		Routes: []Route{{"readapi.Orders", mountOrders}, {"writeapi.OrderActions", mountOrderActions},
			{"readapi.Catalog, writeapi.Catalog", mountCatalog}, {"readapi.Subscriptions", mountSubscriptions}},
		Commands: []string{"dev generate"},
	}, {
		Name:       "messaging",
		Projectors: func(d Deps) []projections.Projector { return one(messaging.Projector(d.Codec)) },
		Routes:     []Route{{"whatsapp.Receiver, providers.Receiver", mountMessaging}},
		Commands:   []string{"messaging"},
	}, {
		Name:       "conversations",
		Projectors: func(d Deps) []projections.Projector { return one(conversations.Projector(d.Codec)) },
		Reactors:   func(d Deps) []projections.Projector { return one(conciergeReactor(d)) },
		Routes:     []Route{{"readapi.Conversations, writeapi.Conversations", mountConversations}},
		Jobs:       []BackgroundJob{{"concierge_answers", conciergeAnswersJob, OnOneServer}},
	}, {
		Name:       "marketplaces",
		Projectors: func(d Deps) []projections.Projector { return one(marketplaces.Projector(d.Codec)) },
		Routes:     []Route{{"marketplace.Receiver", mountMarketplaces}},
		Commands:   []string{"marketplaces"},
	}, {
		Name:       "campaigns",
		Projectors: func(d Deps) []projections.Projector { return one(campaigns.Projector(d.Codec)) },
		Reactors:   func(d Deps) []projections.Projector { return one(templateHolds(d)) },
		Routes:     []Route{{"readapi.Campaigns, writeapi.Campaigns", mountCampaigns}},
	}, {
		Name:   "sending",
		Routes: []Route{{"readapi.Messages", mountMessages}},
		Jobs:   []BackgroundJob{{"message_sending", sendingJob, OnOneServer}},
	}, {
		Name:       "journeys",
		Projectors: func(d Deps) []projections.Projector { return one(journeys.Projector(d.Codec)) },
		Reactors:   func(d Deps) []projections.Projector { return one(enrollment.Projector(d.Codec, enroll(d))) },
		Routes:     []Route{{"readapi.Journeys, writeapi.Journeys", mountJourneys}, {"readapi.Flows, writeapi.Flows", mountFlows}},
	}, {
		Name:       "webhooks",
		Projectors: func(d Deps) []projections.Projector { return one(webhooksubs.Projector(d.Codec)) },
		Routes: []Route{{"writeapi.Webhooks, readapi.Webhooks", mountWebhooks},
			{"readapi.WebhookDeliveries, writeapi.WebhookDeliveries", mountWebhookDeliveries}},
		Jobs:     []BackgroundJob{{"webhook_fanout", webhookFanoutJob, OnEveryServer}, {"webhook_delivery", webhookDeliveryJob, OnOneServer}},
		Commands: []string{"webhooks"},
	}, {
		Name:       "notifications",
		Projectors: func(d Deps) []projections.Projector { return one(notifications.Projector(d.Codec)) },
		Routes: []Route{{"readapi.Notifications, writeapi.Notifications", mountNotifications},
			{"readapi.Shop, writeapi.Shop", mountShop}},
		Jobs:     []BackgroundJob{{"notifications", notifyJob, OnOneServer}},
		Commands: []string{"shops notifications"},
	}, {
		Name:       "reviews",
		Projectors: func(d Deps) []projections.Projector { return one(reviews.Projector(d.Codec)) },
		Routes: []Route{{"readapi.PublicReviews, writeapi.PublicReviews, writeapi.ReviewVotes", mountPublicReviews},
			{"readapi.Reviews, writeapi.Reviews", mountReviews}},
		Commands: []string{"reviews", "dev generate-reviews"},
	}, {
		Name:       "images",
		Projectors: func(d Deps) []projections.Projector { return one(imageops.Projector(d.Codec, d.ImagesChanged)) },
		Routes:     []Route{{"readapi.Images, writeapi.Images", mountImages}},
		Jobs:       []BackgroundJob{{"image_operations", imageWorkersJob, OnOneServer}, {"image_retention", imageRetentionJob, OnEveryServer}},
		Commands:   []string{"images"},
	}, {
		Name:       "intelligence",
		Projectors: func(d Deps) []projections.Projector { return one(intelligence.Projector(d.Codec)) },
		Routes:     []Route{{"readapi.Intelligence", mountIntelligence}, {"readapi.ThemeIncidents", mountThemeIncidents}},
		Jobs:       []BackgroundJob{{"di_schedule", diScheduleJob, OnOneServer}},
		Commands:   []string{"di", "seo"},
	}, {
		Name:       "attribution",
		Projectors: func(d Deps) []projections.Projector { return one(attribution.Projector(d.Codec)) },
		Routes:     []Route{{"readapi.Attribution", mountAttribution}, {"readapi.AttributionSettings", mountAttributionSettings}},
		Jobs:       []BackgroundJob{{"warehouse", warehouseJob, OnEveryServer}},
		Commands:   []string{"shops attribution"},
	}, {
		Name:       "audit",
		Projectors: func(Deps) []projections.Projector { return one(audit.Projector()) },
		Routes:     []Route{{"readapi.Audit", mountAudit}},
		Commands:   []string{"audit"},
	}, {
		// The admin interface (issue 22): merchant users (their read model
		// is the tenancy projector's), sign-in and sessions, and the
		// account's shops.
		Name:     "adminui",
		Routes:   []Route{{"adminui.UI", mountAdminUI}},
		Commands: []string{"users"},
	}, {
		Name:     "anomalies",
		Reactors: func(d Deps) []projections.Projector { return one(anomalyRaiser(d)) },
		Jobs:     []BackgroundJob{{"brute_force_alerts", bruteForceAlertsJob, OnEveryServer}},
	}, {
		Name: "gdpr",
		Reactors: func(d Deps) []projections.Projector {
			return []projections.Projector{erasure.Projector(d.Codec, eraseCustomer(d)), shopErasure(d)}
		},
		Projectors: func(d Deps) []projections.Projector {
			return one(gdprrequests.Projector(d.Codec, d.ExportRequested))
		},
		Routes:   []Route{{"readapi.GDPRRequests", mountGDPR}},
		Jobs:     []BackgroundJob{{"erasure_followups", erasureFollowupsJob, OnEveryServer}, {"data_exports", dataExportsJob, OnOneServer}},
		Commands: []string{"gdpr", "shops privacy"},
	}, {
		Name:   "install",
		Routes: []Route{{"platform.Installer", mountInstall}},
		Jobs:   []BackgroundJob{{"platform_webhooks", platformWebhooksJob, OnOneServer}, {"platform_reconsent", platformReconsentJob, OnOneServer}},
	}, {
		Name:     "platform",
		Jobs:     []BackgroundJob{{"projections", projectionsJob, OnEveryServer}, {"read_model_versions", readModelVersionsJob, OnEveryServer}},
		Routes:   []Route{{"httpapi.Ops", mountOps}, {"openapi", mountOpenAPI}, {"reference.Site", mountReference}},
		Commands: []string{"serve", "replay", "dev"},
	}}
}

func one(p projections.Projector) []projections.Projector { return []projections.Projector{p} }

// Projectors are every module's projectors, in registration order.
func Projectors(d Deps) []projections.Projector {
	var out []projections.Projector
	for _, m := range Modules() {
		if m.Projectors != nil {
			out = append(out, m.Projectors(d)...)
		}
	}
	return out
}

// Reactors are every module's reactors, in registration order (after the
// projectors).
func Reactors(d Deps) []projections.Projector {
	var out []projections.Projector
	for _, m := range Modules() {
		if m.Reactors != nil {
			out = append(out, m.Reactors(d)...)
		}
	}
	return out
}

// enroll is the enrollment reactor's command: EnrollInJourney, keyed by
// the trigger event's id (system actor, the trigger event's id as
// correlation id). Nil without commands.
func enroll(d Deps) enrollment.Enroll {
	if d.Commands == nil {
		return nil
	}
	cmds := d.Commands
	return func(ctx context.Context, in domain.Enrollment) error {
		_, err := cmds.EnrollInJourney(ctx, commands.EnrollInJourney{Enrollment: in},
			commands.Meta{RequestID: in.TriggerEventID, Actor: "system:journeys", Source: "system"})
		return err
	}
}

// recordConsent is the consent-reply reactor's command: RecordConsent,
// keyed by the inbound message event's id (system actor, that id as
// correlation id). Nil without commands.
func recordConsent(d Deps) consentreplies.Record {
	if d.Commands == nil {
		return nil
	}
	cmds := d.Commands
	return func(ctx context.Context, in domain.ConsentDecision, sourceEventID string) error {
		_, err := cmds.RecordConsent(ctx, commands.RecordConsent{Decision: in, SourceEventID: sourceEventID},
			commands.Meta{RequestID: sourceEventID, Actor: "system:consent_replies", Source: "system"})
		return err
	}
}

// templateHolds is the template reactor: on each WhatsApp template status
// event it pauses, resumes or unblocks the shop's campaigns and journeys
// using the template, through the ApplyTemplateToCampaign and
// ApplyTemplateToJourney commands (system actor, the template event's id
// as correlation id).
func templateHolds(d Deps) projections.Projector {
	cmds := d.Commands
	apply := func(ctx context.Context, kind, shop, id string, change domain.TemplateChange) error {
		meta := commands.Meta{RequestID: change.EventID, Actor: "system:template_holds", Source: "system"}
		var err error
		switch kind {
		case templateholds.KindCampaign:
			_, _, err = cmds.ApplyTemplateToCampaign(ctx, commands.ApplyTemplateToCampaign{ShopID: shop, CampaignID: id, Change: change}, meta)
		case templateholds.KindJourney:
			_, _, err = cmds.ApplyTemplateToJourney(ctx, commands.ApplyTemplateToJourney{ShopID: shop, JourneyID: id, Change: change}, meta)
		default:
			err = fmt.Errorf("template user of unknown kind %q", kind)
		}
		return err
	}
	return templateholds.Projector(d.Codec, apply)
}
