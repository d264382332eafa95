package app

import (
	"context"
	"path/filepath"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cgp-platform/cgp/outbound"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/webhooks"
	"github.com/cgp-platform/cgp/writeapi"
)

// WebhooksFile is the outbound webhooks' delivery store in the data
// directory.
const WebhooksFile = "webhooks.db"

// openWebhooks opens the delivery side of the outbound webhooks.
func openWebhooks(ctx context.Context, cfg Config, core *Core, reg prometheus.Registerer) (*webhooks.Service, error) {
	h := cfg.Test.OutboundWebhooks
	return webhooks.Open(ctx, webhooks.Config{
		Path: filepath.Join(cfg.DataDir, WebhooksFile), Log: core.Log, Codec: core.Codec, Commands: core.Commands,
		Logger: core.Logger, Registry: reg,
		Sender: &outbound.Sender{AllowPrivate: cfg.OutboundAllowPrivate, TLSConfig: cfg.Test.OutboundTLS, Timeout: h.Timeout,
			UserAgent: "cgp-webhooks/1"},
		Dispatch: webhooks.DispatcherConfig{Schedule: h.Schedule, DisableAfter: h.DisableAfter, Now: h.Now},
	})
}

// webhookDeliveryJob runs the outbound webhooks' fan-out and dispatcher.
func webhookDeliveryJob(a *App) func(ctx context.Context) error { return a.Webhooks.Run }

// mountWebhookDeliveries registers the deliveries of the outbound
// webhooks: their attempt log, retry, recover and test.
func mountWebhookDeliveries(a *App, r *mux.Router, idem Middleware) {
	readapi.NewWebhookDeliveries(a.Webhooks, a.Auth, a.cursors).Routes(r)
	writeapi.NewWebhookDeliveries(a.Commands, a.Webhooks, a.Auth, idem, time.Now).Routes(r)
}
