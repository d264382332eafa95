package app

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cgp-platform/cgp/domain"
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

// webhookFanoutJob runs the outbound webhooks' fan-out on every server:
// it folds the deliveries and the attempts recorded in the log into the
// server's own webhooks.db, which the attempt log API reads.
func webhookFanoutJob(a *App) func(ctx context.Context) error { return a.Webhooks.RunFanout }

// webhookDeliveryJob runs the outbound webhooks' dispatcher (on one
// server: it posts to the subscribers).
func webhookDeliveryJob(a *App) func(ctx context.Context) error { return a.Webhooks.RunDispatcher }

// mountWebhookDeliveries registers the deliveries of the outbound
// webhooks: their attempt log, retry, recover and test.
func mountWebhookDeliveries(a *App, r *mux.Router, idem Middleware) {
	readapi.NewWebhookDeliveries(a.Webhooks, a.Auth, a.cursors).Routes(r)
	writeapi.NewWebhookDeliveries(a.Commands, a.Webhooks, a.Auth, idem, time.Now).Routes(r)
}

// WebhookDeliveryList is what `cgp webhooks deliveries` prints: the
// latest deliveries of a subscription of shop, with their attempts, read
// from the delivery store (a running server's too: SQLite readers do not
// block it).
func WebhookDeliveryList(ctx context.Context, cfg Config, shop, subscription, state string, limit int) (map[string]any, error) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(cfg.DataDir, WebhooksFile)+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return nil, fmt.Errorf("open the webhook delivery store: %w", err)
	}
	defer db.Close()
	q := webhooks.NewQueries(db)
	if ok, err := q.HasSubscription(ctx, shop, subscription); err != nil || !ok {
		if err == nil {
			err = domain.NotFound("webhook subscription")
		}
		return nil, err
	}
	rows, _, err := q.Deliveries(ctx, webhooks.ListQuery{Shop: shop, Subscription: subscription, State: state, Desc: true, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]any, len(rows))
	for i := range rows {
		res := readapi.DeliveryResource(&rows[i])
		out[i] = map[string]any{"id": res.ID, "attributes": res.Attributes}
	}
	return map[string]any{"subscription_id": subscription, "deliveries": out}, nil
}
