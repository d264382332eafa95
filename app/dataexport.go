package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/dataexport"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections/attribution"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/projections/gdprrequests"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/projections/messaging"
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
	// DefaultExportPoll is how often the exporter looks for due retries
	// when nothing wakes it.
	DefaultExportPoll = 30 * time.Second
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

// Exporter delivers due data exports: the data-export job.
type Exporter struct {
	Log   eventlog.Log
	Codec *envelope.Codec
	// WaitFor waits until the named projectors reached pos.
	WaitFor  func(ctx context.Context, pos eventlog.Position, names ...string) error
	Requests *gdprrequests.Queries
	Source   *dataexport.Source
	Delivery *dataexport.Delivery
	// Retry is the first pause before a failed attempt is retried
	// (domain.ExportRetryDelay's base; 0: its default).
	Retry time.Duration
	// Poll is how often due retries are looked for when nothing wakes
	// the exporter (DefaultExportPoll when 0); Wake wakes it on a new
	// request.
	Poll   time.Duration
	Wake   <-chan struct{}
	Now    func() time.Time
	Logger zerolog.Logger
}

// Job runs the exporter until ctx ends: a pass at once, then one on every
// new request and every poll interval.
func (x *Exporter) Job(ctx context.Context) error {
	poll := x.Poll
	if poll <= 0 {
		poll = DefaultExportPoll
	}
	if x.Now == nil {
		x.Now = time.Now
	}
	return EveryTickOrWake(ctx, poll, x.Wake, x.pass)
}

// pass attempts every due request once.
func (x *Exporter) pass(ctx context.Context) {
	due, err := x.Requests.Due(ctx, x.Now(), exportBatch)
	if err != nil {
		if ctx.Err() == nil {
			x.Logger.Warn().Err(err).Msg("listing due data requests")
		}
		return
	}
	for _, r := range due {
		if ctx.Err() != nil {
			return
		}
		if err := x.attempt(ctx, r); err != nil && ctx.Err() == nil {
			x.Logger.Warn().Err(err).Str("shop_id", r.ShopID).Str("request_id", r.ID).Msg("data export attempt")
		}
	}
}

// attempt builds and delivers one request's export and records the
// outcome, then waits until the read model has it (so the next pass does
// not try the same attempt again).
func (x *Exporter) attempt(ctx context.Context, r gdprrequests.Request) error {
	wctx, cancel := context.WithTimeout(ctx, exportCatchUp)
	err := x.WaitFor(wctx, eventlog.Position(r.Pos), exportInputs...)
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
	now := x.Now().UTC()
	var outcome dataexport.Outcome
	settings, err := x.Requests.Settings(ctx, r.ShopID)
	if err != nil {
		return err
	}
	signing, err := x.Codec.OpenSecret(ctx, r.ShopID, gdprrequests.SecretLabel, settings.SigningSecret)
	if err != nil {
		return err
	}
	export, err := x.Source.Build(ctx, subject, now)
	if err == nil {
		outcome, err = x.Delivery.Deliver(ctx, dataexport.Destination{URL: settings.DataRequestURL,
			SigningSecret: signing, ContactEmail: settings.ContactEmail}, export, now)
	}
	export = nil // the export lives only for this attempt
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		x.Logger.Warn().Err(err).Str("shop_id", r.ShopID).Str("request_id", r.ID).Msg("building a data export")
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
			Reason: outcome.Reason, AttemptedAt: now, NextAttemptAt: now.Add(domain.ExportRetryDelay(attempt, x.Retry))}
		id = fmt.Sprintf("DataExportAttemptFailed/%d", attempt)
	}
	data, err := x.Codec.Encode(ctx, eventlog.DeterministicID(r.ID, id), r.ShopID, ev, now,
		eventlog.Metadata{CorrelationID: r.EventID, CausationID: r.EventID, Actor: exportActor, Source: "system"})
	if err != nil {
		return err
	}
	res, err := x.Log.Append(ctx, domain.GDPRRequestStream(r.ID), eventlog.Any(), data)
	if err != nil {
		return fmt.Errorf("record data export outcome: %w", err)
	}
	log := x.Logger.Info()
	if outcome.Reason != "" {
		log = x.Logger.Warn().Str("reason", outcome.Reason)
	}
	log.Str("shop_id", r.ShopID).Str("request_id", r.ID).Int("attempt", attempt).Str("channel", outcome.Channel).
		Msg("data export attempt")
	wctx, cancel = context.WithTimeout(ctx, exportCatchUp)
	defer cancel()
	return x.WaitFor(wctx, res.Position, gdprrequests.Name)
}

// subject reads the request's event again for what it names (the phone
// number is personal data: it is kept only in the sealed event).
func (x *Exporter) subject(ctx context.Context, r gdprrequests.Request) (dataexport.Subject, error) {
	evs, err := x.Log.ReadStream(ctx, r.EventStream, r.EventRevision, 1)
	if err != nil {
		return dataexport.Subject{}, fmt.Errorf("read data request: %w", err)
	}
	if len(evs) != 1 || evs[0].ID.String() != r.EventID {
		return dataexport.Subject{}, fmt.Errorf("data request %s: its event is not at %s@%d", r.ID, r.EventStream, r.EventRevision)
	}
	d, err := x.Codec.Decode(ctx, &evs[0])
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
