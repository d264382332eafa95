package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/dataexport"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/outbound"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/attribution"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/projections/gdprrequests"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/projections/messaging"
	"github.com/cgp-platform/cgp/readapi"
)

// The data-export reactor answers customers/data_request: the
// gdpr_requests projector records each request and wakes the exporter,
// which builds the export from the read models and the log, delivers it
// (signed HTTPS POST to the shop's data-request URL, otherwise e-mail to
// its contact address) and records the outcome on the request's own
// stream: DataExportAttemptFailed (retried with exponential backoff, 1
// minute doubling up to 6 hours) or GdprRequestCompleted. The events' ids
// derive from the request and the attempt number, so two servers, or a
// restart in the middle of an attempt, record each outcome once. The
// export is rebuilt for every attempt and never written to disk.

const (
	// defaultExportPoll is how often the exporter looks for due retries
	// when nothing wakes it.
	defaultExportPoll = 30 * time.Second
	// exportBatch is the most requests one pass attempts.
	exportBatch = 50
	// exportCatchUp bounds the wait for the read models to reach a
	// request before its export is built; a request whose wait times out
	// is tried again at the next pass.
	exportCatchUp = 2 * time.Minute
	// exportActor is the actor of the events the exporter records.
	exportActor = "system:data_export"
)

// exportInputs are the read models an export reads.
var exportInputs = []string{customers.Name, commerce.Name, messaging.Name, attribution.Name, journeys.Name, gdprrequests.Name}

// gdprProjectors returns the GDPR requests projector, which wakes the
// exporter on each new request.
func gdprProjectors(a *App) []projections.Projector {
	if a.exportWake == nil {
		a.exportWake = make(chan struct{}, 1)
	}
	return []projections.Projector{gdprrequests.Projector(a.Codec, a.exportRequested)}
}

// exportRequested wakes the exporter (never blocks).
func (a *App) exportRequested() {
	select {
	case a.exportWake <- struct{}{}:
	default:
	}
}

// mountGDPR registers GET /api/v1/gdpr-requests.
func mountGDPR(a *App, r *mux.Router) {
	readapi.NewGDPRRequests(gdprrequests.NewQueries(a.Store.DB()), a.Auth, mustCursorCodec(a.Core), a.Runtime).Routes(r)
}

// exporter delivers due data exports.
type exporter struct {
	log      eventlog.Log
	codec    *envelope.Codec
	runtime  *projections.Runtime
	requests *gdprrequests.Queries
	source   *dataexport.Source
	delivery *dataexport.Delivery
	retry    time.Duration
	now      func() time.Time
	logger   zerolog.Logger
}

func newExporter(a *App) *exporter {
	cfg := a.Config
	return &exporter{
		log: a.Log, codec: a.Codec, runtime: a.Runtime, requests: gdprrequests.NewQueries(a.Store.DB()),
		source: &dataexport.Source{Log: a.Log, Codec: a.Codec, DB: a.Store.DB()},
		delivery: &dataexport.Delivery{
			Sender: &outbound.Sender{AllowPrivate: cfg.OutboundAllowPrivate, TLSConfig: cfg.outboundTLS, UserAgent: "cgp-data-export/1"},
			Mailer: &dataexport.Mailer{Addr: cfg.SMTPAddr, From: cfg.SMTPFrom, Username: cfg.SMTPUsername, Password: cfg.SMTPPassword,
				TLSConfig: cfg.exportSMTPTLS},
		},
		retry:  cfg.exportRetry,
		now:    time.Now,
		logger: a.Logger.With().Str("job", "data_export").Logger(),
	}
}

// runDataExports runs the exporter until ctx ends: a pass at once, then
// one on every new request and every poll interval. It is nil when no
// gdpr_requests projector is registered.
func (a *App) runDataExports() func(ctx context.Context) error {
	poll := a.Config.exportPoll
	if poll <= 0 {
		poll = defaultExportPoll
	}
	wake := a.exportWake
	if wake == nil { // no gdpr_requests projector registered
		return nil
	}
	return func(ctx context.Context) error {
		x := newExporter(a)
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			x.pass(ctx)
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			case <-wake:
			}
		}
	}
}

// pass attempts every due request once.
func (x *exporter) pass(ctx context.Context) {
	due, err := x.requests.Due(ctx, x.now(), exportBatch)
	if err != nil {
		if ctx.Err() == nil {
			x.logger.Warn().Err(err).Msg("listing due data requests")
		}
		return
	}
	for _, r := range due {
		if ctx.Err() != nil {
			return
		}
		if err := x.attempt(ctx, r); err != nil && ctx.Err() == nil {
			x.logger.Warn().Err(err).Str("shop_id", r.ShopID).Str("request_id", r.ID).Msg("data export attempt")
		}
	}
}

// attempt builds and delivers one request's export and records the
// outcome, then waits until the read model has it (so the next pass does
// not try the same attempt again).
func (x *exporter) attempt(ctx context.Context, r gdprrequests.Request) error {
	wctx, cancel := context.WithTimeout(ctx, exportCatchUp)
	err := x.runtime.WaitFor(wctx, uint64(r.Pos), exportInputs...)
	cancel()
	if err != nil {
		return fmt.Errorf("read models behind the request: %w", err)
	}
	subject, err := x.subject(ctx, r)
	if errors.Is(err, envelope.ErrShopErased) {
		return nil // the shop's data is gone; its rows go with it
	}
	if err != nil {
		return err
	}
	now := x.now().UTC()
	var outcome dataexport.Outcome
	settings, err := x.requests.Settings(ctx, r.ShopID)
	if err != nil {
		return err
	}
	signing, err := x.codec.OpenSecret(ctx, r.ShopID, gdprrequests.SecretLabel, settings.SigningSecret)
	if err != nil {
		return err
	}
	export, err := x.source.Build(ctx, subject, now)
	if err == nil {
		outcome, err = x.delivery.Deliver(ctx, dataexport.Destination{URL: settings.DataRequestURL,
			SigningSecret: signing, ContactEmail: settings.ContactEmail}, export, now)
	}
	export = nil // the export lives only for this attempt
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		x.logger.Warn().Err(err).Str("shop_id", r.ShopID).Str("request_id", r.ID).Msg("building a data export")
		outcome = dataexport.Outcome{Reason: "export_failed"}
	}
	attempt := r.Attempts + 1
	var ev domain.Event
	var id string
	if outcome.Reason == "" {
		ev = &domain.GdprRequestCompleted{RequestID: r.ID, ShopID: r.ShopID, Kind: r.Kind, Channel: outcome.Channel,
			Status: domain.GDPRStatusCompleted, CompletedAt: now, Bytes: outcome.Bytes, SHA256: outcome.SHA256}
		id = "GdprRequestCompleted"
	} else {
		ev = &domain.DataExportAttemptFailed{RequestID: r.ID, ShopID: r.ShopID, Attempt: attempt, Channel: outcome.Channel,
			Reason: outcome.Reason, AttemptedAt: now, NextAttemptAt: now.Add(domain.ExportRetryDelay(attempt, x.retry))}
		id = fmt.Sprintf("DataExportAttemptFailed/%d", attempt)
	}
	data, err := x.codec.Encode(ctx, eventlog.DeterministicID(r.ID, id), r.ShopID, ev, now,
		eventlog.Metadata{CorrelationID: r.EventID, CausationID: r.EventID, Actor: exportActor, Source: "system"})
	if err != nil {
		return err
	}
	res, err := x.log.Append(ctx, domain.GDPRRequestStream(r.ID), eventlog.Any(), data)
	if err != nil {
		return fmt.Errorf("record data export outcome: %w", err)
	}
	log := x.logger.Info()
	if outcome.Reason != "" {
		log = x.logger.Warn().Str("reason", outcome.Reason)
	}
	log.Str("shop_id", r.ShopID).Str("request_id", r.ID).Int("attempt", attempt).Str("channel", outcome.Channel).
		Msg("data export attempt")
	wctx, cancel = context.WithTimeout(ctx, exportCatchUp)
	defer cancel()
	return x.runtime.WaitFor(wctx, res.Position, gdprrequests.Name)
}

// subject reads the request's event again for what it names (the phone
// number is personal data: it is kept only in the sealed event).
func (x *exporter) subject(ctx context.Context, r gdprrequests.Request) (dataexport.Subject, error) {
	evs, err := x.log.ReadStream(ctx, r.EventStream, r.EventRevision, 1)
	if err != nil {
		return dataexport.Subject{}, fmt.Errorf("read data request: %w", err)
	}
	if len(evs) != 1 || evs[0].ID.String() != r.EventID {
		return dataexport.Subject{}, fmt.Errorf("data request %s: its event is not at %s@%d", r.ID, r.EventStream, r.EventRevision)
	}
	d, err := x.codec.Decode(ctx, &evs[0])
	if err != nil {
		return dataexport.Subject{}, err
	}
	ev, ok := d.Event.(*domain.CustomerDataRequested)
	if !ok {
		return dataexport.Subject{}, fmt.Errorf("data request %s: event is a %s", r.ID, d.Event.EventType())
	}
	return dataexport.Subject{ShopID: r.ShopID, CustomerID: ev.CustomerID, RequestID: r.ID, PlatformRequestID: ev.RequestID,
		Phone: ev.Phone, Orders: ev.OrdersRequested}, nil
}

// newShopsPrivacy is `cgp shops privacy`: it sets where the shop's data
// exports go and prints the new signing secret once. A flag left out
// keeps its current value; an empty one clears it.
func newShopsPrivacy(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop, url, email string
	cmd := &cobra.Command{Use: "privacy", Short: "Set a shop's data-request URL and contact e-mail; prints a new signing secret (shown once)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				ctx := cmd.Context()
				var s domain.Shop
				var current domain.PrivacySettings
				if err := foldStream(ctx, c, domain.ShopStream(shop), s.Apply); err != nil {
					return err
				}
				if err := foldStream(ctx, c, domain.PrivacySettingsStream(shop), current.Apply); err != nil {
					return err
				}
				if !cmd.Flags().Changed("data-request-url") {
					url = current.DataRequestURL
				}
				if !cmd.Flags().Changed("contact-email") {
					email = current.ContactEmail
				}
				if url != "" {
					if err := outbound.CheckURL(url, cfg.OutboundAllowPrivate); err != nil {
						return domain.Invalid("data_request_url", "%s", err.Error())
					}
				}
				secret, err := outbound.NewSecret()
				if err != nil {
					return err
				}
				ev, err := domain.ChangePrivacySettings(&s, url, email, secret, time.Now())
				if err != nil {
					return err
				}
				data, err := c.Codec.Encode(ctx, eventlog.DeterministicID("ShopPrivacySettingsChanged", shop, secret), shop, ev, time.Now(),
					eventlog.Metadata{Actor: "cli", Source: "cli"})
				if err != nil {
					return err
				}
				res, err := c.Log.Append(ctx, domain.PrivacySettingsStream(shop), eventlog.Any(), data)
				if err != nil {
					return fmt.Errorf("record privacy settings: %w", err)
				}
				return printJSON(stdout, map[string]any{"id": shop, "data_request_url": ev.DataRequestURL, "contact_email": ev.ContactEmail,
					"signing_secret": secret, "position": res.Position})
			})
		}}
	f := cmd.Flags()
	f.StringVar(&shop, "shop", "", "shop id (shop_…)")
	f.StringVar(&url, "data-request-url", "", "HTTPS URL that receives the signed data exports; empty: e-mail them")
	f.StringVar(&email, "contact-email", "", "e-mail address that receives the data exports when no URL is set; empty: the shop's contact e-mail")
	return cmd
}

// foldStream applies every event of stream to apply.
func foldStream(ctx context.Context, c *Core, stream string, apply func(domain.Event)) error {
	for from := uint64(0); ; {
		evs, err := c.Log.ReadStream(ctx, stream, from, 500)
		if err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		for i := range evs {
			d, err := c.Codec.Decode(ctx, &evs[i])
			if err != nil {
				return err
			}
			apply(d.Event)
		}
		if len(evs) < 500 {
			return nil
		}
		from = evs[len(evs)-1].Revision + 1
	}
}

// newGDPRRequests is `cgp gdpr requests --shop ID`: the shop's GDPR
// requests with their delivery status, as the read model keeps them.
func newGDPRRequests(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop string
	cmd := &cobra.Command{Use: "requests", Short: "List a shop's GDPR data requests and their delivery status", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				store, err := c.Config.openReadModels()
				if err != nil {
					return err
				}
				defer store.Close()
				var tables int
				if err := store.DB().QueryRowContext(cmd.Context(), `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'gdpr_requests'`).
					Scan(&tables); err != nil {
					return fmt.Errorf("read models: %w", err)
				}
				if tables == 0 { // the server never ran this version
					return printJSON(stdout, map[string]any{"shop_id": shop, "requests": []any{}})
				}
				q := gdprrequests.NewQueries(store.DB())
				out := []readapi.GDPRRequestAttributes{}
				var after *gdprrequests.Key
				ids := []string{}
				for {
					page, next, err := q.Requests(cmd.Context(), shop, gdprrequests.Page{After: after, Limit: 100})
					if err != nil {
						return err
					}
					for i := range page {
						out = append(out, readapi.GDPRRequestResource(&page[i]).Attributes.(readapi.GDPRRequestAttributes))
						ids = append(ids, page[i].ID)
					}
					if next == nil {
						break
					}
					after = next
				}
				type row struct {
					ID string `json:"id"`
					readapi.GDPRRequestAttributes
				}
				rows := make([]row, len(out))
				for i := range out {
					rows[i] = row{ID: ids[i], GDPRRequestAttributes: out[i]}
				}
				return printJSON(stdout, map[string]any{"shop_id": shop, "requests": rows})
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	return cmd
}
