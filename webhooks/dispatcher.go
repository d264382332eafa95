package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/outbound"
)

// DefaultSchedule is the delays between a failed attempt and the next
// one: ten attempts spanning about three days (2 d 20 h 36 min 10 s
// before jitter), after which the delivery has failed.
var DefaultSchedule = []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 24 * time.Hour}

// Defaults of the dispatcher.
const (
	// DefaultTimeout bounds one attempt: an answer not complete by then is
	// a failure (timeout).
	DefaultTimeout = 15 * time.Second
	// DefaultDisableAfter is how long an endpoint may fail without a
	// success before its subscription is disabled; warnings are recorded
	// after a fifth and after three fifths of it (1 and 3 days).
	DefaultDisableAfter = 5 * 24 * time.Hour
	// DefaultPerEndpoint is how many attempts run at once to one
	// subscription while it answers.
	DefaultPerEndpoint = 16
	// DefaultRetryAfterCap bounds how long a Retry-After answer delays an
	// endpoint's next attempt.
	DefaultRetryAfterCap = time.Hour
	// DefaultRetention is how long settled deliveries (succeeded, failed,
	// held) and their attempts are kept: a recover reaches back as far.
	DefaultRetention = 30 * 24 * time.Hour
)

// Actor is the actor of the dispatcher's commands in the audit history.
const Actor = "system:webhook_delivery"

// DispatcherConfig configures a Dispatcher.
type DispatcherConfig struct {
	// DB is the delivery store (read pool): the dispatcher only reads it;
	// the fan-out folds what Record appended.
	DB *sql.DB
	// Record appends a batch of one shop's attempts to the log
	// (WebhookAttemptsRecorded) and returns its position; Folded waits
	// until the fan-out applied the log up to a position. Filled by Open.
	Record func(ctx context.Context, shop string, attempts []domain.WebhookAttempt) (uint64, error)
	Folded func(ctx context.Context, pos uint64) error
	// Codec opens the subscriptions' sealed secrets.
	Codec *envelope.Codec
	// Sender posts through the outbound guard; its Timeout is the
	// attempt's (DefaultTimeout when zero).
	Sender *outbound.Sender
	// Commands records disablings and warnings (nil: none is recorded).
	Commands *commands.Handler
	Logger   zerolog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Schedule is the retry delays (DefaultSchedule when nil).
	Schedule []time.Duration
	// DisableAfter, PerEndpoint, RetryAfterCap, Retention: defaults above
	// when zero. Retention is applied by the Service, on every server.
	DisableAfter  time.Duration
	PerEndpoint   int
	RetryAfterCap time.Duration
	Retention     time.Duration
}

func (c *DispatcherConfig) setDefaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Schedule == nil {
		c.Schedule = DefaultSchedule
	}
	if c.DisableAfter <= 0 {
		c.DisableAfter = DefaultDisableAfter
	}
	if c.PerEndpoint <= 0 {
		c.PerEndpoint = DefaultPerEndpoint
	}
	if c.RetryAfterCap <= 0 {
		c.RetryAfterCap = DefaultRetryAfterCap
	}
	if c.Retention <= 0 {
		c.Retention = DefaultRetention
	}
	if c.Sender == nil {
		c.Sender = &outbound.Sender{}
	}
	if c.Sender.Timeout <= 0 {
		c.Sender.Timeout = DefaultTimeout
	}
}

// Dispatcher attempts the pending deliveries of the delivery store. Each
// subscription is its own queue: at most PerEndpoint attempts to it at
// once, and after a failure only one (a probe) until one succeeds, no
// sooner than a backoff of the schedule or the endpoint's Retry-After, so
// a failing, slow or hanging endpoint holds up none of the others. One
// goroutine owns the queues' state and records the outcomes in batches in
// the log (WebhookAttemptsRecorded), which the fan-out folds into the
// store on every server; a delivery is not picked again before its
// outcome is folded. The attempts run in goroutines of their own.
// Delivery is at least once: an attempt whose outcome was not recorded
// (the process died, or lost the deliveries to another server while the
// attempt was under way) is made again.
type Dispatcher struct {
	cfg  DispatcherConfig
	wake chan struct{}

	endpoints map[string]*endpoint
	inflight  map[string]bool
	results   chan result
	wg        sync.WaitGroup
	opened    map[string]string // sealed secret → opened
	// subs is the subscriptions as read at subsAt, when subsVersion was
	// subsRead.
	subs        []*sub
	subsAt      time.Time
	subsRead    int64
	subsVersion atomic.Int64
}

// endpoint is one subscription's queue state, owned by Run's goroutine.
type endpoint struct {
	sending int
	// failures counts consecutive failed attempts; blockedUntil is when a
	// probe may go after the last failure.
	failures     int
	blockedUntil time.Time
	// failedAt is when the last failure came back.
	failedAt time.Time
	// unrecorded counts the attempts started and not yet recorded.
	unrecorded int
	// disabling is set once a disabling was asked for, until the
	// subscription reads disabled.
	disabling bool
}

// sub is a subscription as the dispatcher reads it.
type sub struct {
	id, shop, url        string
	enabled              bool
	secret, previous     string
	previousUntil        int64
	failingSince, warned int64
}

type result struct {
	sub       *sub
	delivery  string
	eventType string
	attempt   int // this attempt's number
	at        time.Time
	resp      outbound.Response
	reason    string // "" on success
	canceled  bool
}

// NewDispatcher returns a dispatcher.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	cfg.setDefaults()
	return &Dispatcher{cfg: cfg, wake: make(chan struct{}, 1), endpoints: map[string]*endpoint{}, inflight: map[string]bool{},
		results: make(chan result, 1024), opened: map[string]string{}}
}

// Wake makes Run look for due deliveries now (never blocks).
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then waits for the attempts under way
// (their outcomes are not recorded: they are made again at the next
// start). Outcomes free their endpoint's slot as soon as they come back;
// a writer goroutine records them in batches meanwhile (in the log, then
// waits for the fan-out's fold), so attempts never wait for either. Run may be called again once it returned (its
// server lost the lease of the delivery job, then had it again): it starts
// afresh, as at the next start.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.restart()
	defer d.wg.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	type written struct {
		batch  []result
		follow []followup
		err    error
	}
	toWrite, done := make(chan []result), make(chan written, 1)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for b := range toWrite {
			follow, err := d.write(ctx, b)
			done <- written{b, follow, err}
		}
	}()
	defer close(toWrite)
	var unwritten []result
	writing := false
	for {
		if !writing && len(unwritten) > 0 {
			toWrite <- unwritten
			unwritten, writing = nil, true
		}
		next, err := d.dispatch(ctx)
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn().Err(err).Msg("webhook dispatch")
			next = d.cfg.Now().Add(time.Second)
		}
		wait := time.Second
		if !next.IsZero() {
			wait = min(max(next.Sub(d.cfg.Now()), time.Millisecond), time.Second)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-d.wake:
		case <-timer.C:
		case r := <-d.results:
			d.answered(r)
			unwritten = append(unwritten, r)
		drain:
			for {
				select {
				case r := <-d.results:
					d.answered(r)
					unwritten = append(unwritten, r)
				default:
					break drain
				}
			}
		case w := <-done:
			writing = false
			for _, r := range w.batch {
				delete(d.inflight, r.delivery)
				d.endpoint(r.sub.id).unrecorded--
			}
			if w.err != nil && ctx.Err() == nil {
				// The deliveries whose outcome was not recorded stay due:
				// they are attempted again (at least once).
				d.cfg.Logger.Error().Err(w.err).Int("outcomes", len(w.batch)).Msg("recording webhook attempts")
			}
			for _, f := range w.follow {
				d.followUp(ctx, f)
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// restart forgets the queue state of a previous Run, whose attempts have
// all returned (Run waited for them): those not recorded are pending in
// the store, due again, and their outcomes left on d.results are dropped
// with them. The subscriptions are read again.
func (d *Dispatcher) restart() {
	clear(d.endpoints)
	clear(d.inflight)
	d.subs, d.subsAt, d.subsRead = nil, time.Time{}, 0
	for {
		select {
		case <-d.results:
		default:
			return
		}
	}
}

// answered updates an endpoint's queue with an attempt's outcome: its
// slot is free; a success closes its breaker; a failure opens it for a
// backoff. Attempts that were under way together when the first failure
// came back count as one failure, not as that many in a row.
func (d *Dispatcher) answered(r result) {
	ep := d.endpoint(r.sub.id)
	ep.sending--
	now := d.cfg.Now()
	switch {
	case r.canceled:
		if r.reason == "internal" {
			ep.blockedUntil = now.Add(time.Second)
		}
	case r.reason == "":
		ep.failures, ep.blockedUntil, ep.failedAt = 0, time.Time{}, time.Time{}
	default:
		if ep.failures == 0 || !r.at.Before(ep.failedAt) {
			ep.failures++
		}
		ep.failedAt = now
		if until := now.Add(d.backoff(ep.failures, r.resp.RetryAfter)); until.After(ep.blockedUntil) {
			ep.blockedUntil = until
		}
	}
}

// dispatch starts the attempts that are due and returns when the next one
// will be (zero: none known).
func (d *Dispatcher) dispatch(ctx context.Context) (time.Time, error) {
	subs, err := d.subscriptions(ctx)
	if err != nil {
		return time.Time{}, err
	}
	now := d.cfg.Now()
	var next time.Time
	soonest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	seen := make(map[string]bool, len(subs))
	for _, s := range subs {
		seen[s.id] = true
		ep := d.endpoint(s.id)
		if !s.enabled {
			ep.disabling = false
		}
		free := d.cfg.PerEndpoint - ep.sending
		if ep.failures > 0 {
			free = 1 - ep.sending
		}
		// While the store records slowly, an endpoint's answered attempts
		// wait for it: past a bound, no more start.
		if free <= 0 || ep.unrecorded >= 8*d.cfg.PerEndpoint {
			continue
		}
		if ep.blockedUntil.After(now) {
			soonest(ep.blockedUntil)
			continue
		}
		onlyPing := !s.enabled || ep.disabling
		due, later, err := d.due(ctx, s.id, now, free+ep.unrecorded, onlyPing)
		if err != nil {
			return time.Time{}, err
		}
		soonest(later)
		var chosen []dueDelivery
		for _, dl := range due {
			if len(chosen) == free {
				break
			}
			if !d.inflight[dl.id] {
				chosen = append(chosen, dl)
			}
		}
		if err := d.bodies(ctx, chosen); err != nil {
			return time.Time{}, err
		}
		for _, dl := range chosen {
			d.start(ctx, s, ep, dl)
		}
	}
	for id, ep := range d.endpoints {
		if !seen[id] && ep.sending == 0 && ep.unrecorded == 0 {
			delete(d.endpoints, id)
		}
	}
	return next, nil
}

func (d *Dispatcher) endpoint(id string) *endpoint {
	ep := d.endpoints[id]
	if ep == nil {
		ep = &endpoint{}
		d.endpoints[id] = ep
	}
	return ep
}

// dueDelivery is a delivery to attempt.
type dueDelivery struct {
	id, eventID, eventType string
	attempts               int
	body                   []byte
}

// due reads up to limit deliveries of subscription id due at now, and
// when the next one falls due when none is.
func (d *Dispatcher) due(ctx context.Context, id string, now time.Time, limit int, onlyPing bool) ([]dueDelivery, time.Time, error) {
	rows, err := d.cfg.DB.QueryContext(ctx, `SELECT id, event_id, event_type, attempts FROM wh_deliveries
	WHERE subscription_id = ? AND state = 'pending' AND (? = 0 OR event_type = 'ping') AND next_attempt_at <= ?
	ORDER BY next_attempt_at, position LIMIT ?`, id, onlyPing, now.UnixMilli(), limit)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("due deliveries: %w", err)
	}
	var out []dueDelivery
	for rows.Next() {
		var dl dueDelivery
		if err := rows.Scan(&dl.id, &dl.eventID, &dl.eventType, &dl.attempts); err != nil {
			rows.Close()
			return nil, time.Time{}, fmt.Errorf("due deliveries: %w", err)
		}
		out = append(out, dl)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, fmt.Errorf("due deliveries: %w", err)
	}
	if len(out) > 0 || onlyPing {
		return out, time.Time{}, nil
	}
	var at sql.NullInt64
	if err := d.cfg.DB.QueryRowContext(ctx, `SELECT MIN(next_attempt_at) FROM wh_deliveries WHERE subscription_id = ? AND state = 'pending'`,
		id).Scan(&at); err != nil {
		return nil, time.Time{}, fmt.Errorf("next delivery: %w", err)
	}
	if !at.Valid {
		return nil, time.Time{}, nil
	}
	return nil, time.UnixMilli(at.Int64), nil
}

// bodies reads the bodies of the deliveries in one query.
func (d *Dispatcher) bodies(ctx context.Context, dls []dueDelivery) error {
	if len(dls) == 0 {
		return nil
	}
	args := make([]any, len(dls))
	at := make(map[string][]int, len(dls))
	for i, dl := range dls {
		args[i] = dl.eventID
		at[dl.eventID] = append(at[dl.eventID], i)
	}
	rows, err := d.cfg.DB.QueryContext(ctx, `SELECT event_id, body FROM wh_payloads WHERE event_id IN (?`+strings.Repeat(", ?", len(dls)-1)+`)`, args...)
	if err != nil {
		return fmt.Errorf("delivery bodies: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var body []byte
		if err := rows.Scan(&id, &body); err != nil {
			return fmt.Errorf("delivery bodies: %w", err)
		}
		for _, i := range at[id] {
			dls[i].body = body
		}
	}
	return rows.Err()
}

// start makes one attempt in a goroutine of its own; its outcome comes
// back on d.results.
func (d *Dispatcher) start(ctx context.Context, s *sub, ep *endpoint, dl dueDelivery) {
	d.inflight[dl.id] = true
	ep.sending++
	ep.unrecorded++
	secrets, err := d.secrets(ctx, s)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		r := result{sub: s, delivery: dl.id, eventType: dl.eventType, attempt: dl.attempts + 1, at: d.cfg.Now()}
		body := dl.body
		if err == nil && body == nil {
			err = errors.New("the event's body is missing")
		}
		if err != nil {
			// The store or the key vault failed: not the endpoint's
			// fault, and not an attempt; it is tried again.
			r.canceled = true
			r.reason = "internal"
			d.results <- r
			return
		}
		resp, err := d.cfg.Sender.Post(ctx, secrets, outbound.Message{URL: s.url, EventID: dl.eventID, EventType: dl.eventType,
			Timestamp: r.at, Body: body})
		r.resp = resp
		if err != nil {
			r.reason = outbound.Reason(err)
			r.canceled = ctx.Err() != nil
		}
		select {
		case d.results <- r:
		case <-ctx.Done():
		}
	}()
}

// secrets are the secrets a delivery to s is signed with now: the
// current one, and the previous one during a rotation's overlap.
func (d *Dispatcher) secrets(ctx context.Context, s *sub) ([][]byte, error) {
	out := [][]byte{}
	sealed := []string{s.secret}
	if s.previous != "" && s.previousUntil > d.cfg.Now().UnixMilli() {
		sealed = append(sealed, s.previous)
	}
	for _, v := range sealed {
		open, ok := d.opened[v]
		if !ok {
			var err error
			if open, err = d.cfg.Codec.OpenSecret(ctx, s.shop, secretLabel, v); err != nil {
				return nil, fmt.Errorf("open the secret of %s: %w", s.id, err)
			}
			if len(d.opened) > 10_000 {
				clear(d.opened)
			}
			d.opened[v] = open
		}
		out = append(out, []byte(open))
	}
	return out, nil
}

// SubscriptionsChanged tells the dispatcher that a subscription changed
// (the fan-out calls it): it reads them again at its next pass.
func (d *Dispatcher) SubscriptionsChanged() { d.subsVersion.Add(1) }

// subscriptions returns every subscription, read again when one changed
// and at least every second.
func (d *Dispatcher) subscriptions(ctx context.Context) ([]*sub, error) {
	v := d.subsVersion.Load()
	if d.subs != nil && v == d.subsRead && d.cfg.Now().Sub(d.subsAt) < time.Second {
		return d.subs, nil
	}
	subs, err := d.readSubscriptions(ctx)
	if err != nil {
		return nil, err
	}
	d.subs, d.subsRead, d.subsAt = subs, v, d.cfg.Now()
	return subs, nil
}

// readSubscriptions reads every subscription.
func (d *Dispatcher) readSubscriptions(ctx context.Context) ([]*sub, error) {
	rows, err := d.cfg.DB.QueryContext(ctx, `SELECT id, shop_id, url, enabled, secret, previous_secret, previous_valid_until,
	failing_since, warned_level FROM wh_subscriptions`)
	if err != nil {
		return nil, fmt.Errorf("webhook subscriptions: %w", err)
	}
	defer rows.Close()
	var out []*sub
	for rows.Next() {
		s := &sub{}
		if err := rows.Scan(&s.id, &s.shop, &s.url, &s.enabled, &s.secret, &s.previous, &s.previousUntil, &s.failingSince,
			&s.warned); err != nil {
			return nil, fmt.Errorf("webhook subscriptions: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// write records a batch of outcomes in the log (one event per shop and up
// to domain.MaxWebhookAttemptsPerEvent attempts), waits until the fan-out
// folded them into the store (so that no delivery is picked again before
// its outcome reads there) and returns the disablings, warnings and
// recoveries they call for. The outcomes of a shop whose record failed
// are lost: their deliveries stay due and are attempted again (at least
// once).
func (d *Dispatcher) write(ctx context.Context, batch []result) ([]followup, error) {
	now := d.cfg.Now()
	byShop := map[string][]domain.WebhookAttempt{}
	var shops []string
	// The last outcome of each subscription in the batch ends its failing
	// period (a success) or starts or extends it.
	last := map[string]result{}
	for _, r := range batch {
		if r.canceled {
			continue
		}
		if _, ok := byShop[r.sub.shop]; !ok {
			shops = append(shops, r.sub.shop)
		}
		byShop[r.sub.shop] = append(byShop[r.sub.shop], d.attempt(r, now))
		if r.eventType != domain.WebhookPingType {
			last[r.sub.id] = r
		}
	}
	// The failing periods as they stand before this batch: the store has
	// folded every batch this dispatcher recorded before.
	periods := make(map[string][2]int64, len(last))
	for id := range last {
		var since, warned int64
		err := d.cfg.DB.QueryRowContext(ctx, `SELECT failing_since, warned_level FROM wh_subscriptions WHERE id = ?`, id).Scan(&since, &warned)
		if errors.Is(err, sql.ErrNoRows) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("failing period of %s: %w", id, err)
		}
		periods[id] = [2]int64{since, warned}
	}
	var errs []error
	recorded := map[string]bool{}
	var head uint64
	for _, shop := range shops {
		attempts := byShop[shop]
		ok := true
		for len(attempts) > 0 {
			n := min(len(attempts), domain.MaxWebhookAttemptsPerEvent)
			pos, err := d.cfg.Record(ctx, shop, attempts[:n])
			attempts = attempts[n:]
			if err != nil {
				errs, ok = append(errs, fmt.Errorf("record the attempts of %s: %w", shop, err)), false
				continue
			}
			head = max(head, pos)
		}
		recorded[shop] = ok
	}
	if head > 0 {
		if err := d.cfg.Folded(ctx, head); err != nil {
			return nil, errors.Join(append(errs, fmt.Errorf("fold the recorded attempts: %w", err))...)
		}
	}
	var follow []followup
	for id, r := range last {
		p, ok := periods[id]
		if !ok || !recorded[r.sub.shop] {
			continue
		}
		since, warned := p[0], p[1]
		if r.reason == "" {
			// A warned failing period that ends is recorded
			// (WebhookSubscriptionRecovered): the merchant was told it
			// was failing.
			if since != 0 && warned > 0 {
				follow = append(follow, followup{s: r.sub, recovered: true, since: time.UnixMilli(since)})
			}
			continue
		}
		if since == 0 {
			since = r.at.UnixMilli()
		}
		if f, ok := d.followupOf(r, time.UnixMilli(since), warned, now); ok {
			follow = append(follow, f)
		}
	}
	return follow, errors.Join(errs...)
}

// followup is a disabling (reason set) or a warning (level set) a failed
// attempt calls for, or the end of a warned failing period (recovered) a
// success calls for.
type followup struct {
	s         *sub
	reason    string
	status    int
	level     int
	recovered bool
	since     time.Time
}

// followupOf decides what a subscription's failed attempt r calls for,
// given when its failing period began and the warnings recorded in it:
// 410 Gone disables at once; failing for DisableAfter disables; a fifth
// and three fifths of it raise warnings 1 and 2.
func (d *Dispatcher) followupOf(r result, since time.Time, warned int64, now time.Time) (followup, bool) {
	failing := now.Sub(since)
	switch {
	case r.resp.Status == 410:
		return followup{s: r.sub, reason: domain.WebhookDisabledGone, status: 410}, true
	case failing >= d.cfg.DisableAfter:
		return followup{s: r.sub, reason: domain.WebhookDisabledFailing, since: since}, true
	case failing >= d.cfg.DisableAfter*3/5 && warned < 2:
		return followup{s: r.sub, level: 2, since: since}, true
	case failing >= d.cfg.DisableAfter/5 && warned < 1:
		return followup{s: r.sub, level: 1, since: since}, true
	}
	return followup{}, false
}

// attempt is the record of one attempt: its outcome and, for a failure
// followed by another attempt, when that one falls due.
func (d *Dispatcher) attempt(r result, now time.Time) domain.WebhookAttempt {
	a := domain.WebhookAttempt{DeliveryID: r.delivery, SubscriptionID: r.sub.id, EventType: r.eventType, Attempt: r.attempt,
		Outcome: domain.WebhookAttemptSucceeded, Status: r.resp.Status, At: r.at, LatencyMS: max(r.resp.Latency.Milliseconds(), 0),
		Answer: answer(r.resp.Body)}
	if r.reason != "" {
		a.ErrorCode = r.reason
		switch {
		case r.eventType == domain.WebhookPingType || r.attempt > len(d.cfg.Schedule):
			a.Outcome = domain.WebhookAttemptGivenUp
		default:
			a.Outcome, a.NextAttemptAt = domain.WebhookAttemptFailed, now.Add(d.delay(r.attempt, r.resp.RetryAfter))
		}
	}
	return a
}

// delay is the wait before attempt n+1 after attempt n failed: the
// endpoint's Retry-After when it sent one (at least a second, at most
// RetryAfterCap), otherwise the schedule's with ±20 % jitter.
func (d *Dispatcher) delay(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return d.retryAfter(retryAfter)
	}
	base := d.cfg.Schedule[min(n-1, len(d.cfg.Schedule)-1)]
	return time.Duration(float64(base) * (0.8 + 0.4*rand.Float64()))
}

func (d *Dispatcher) retryAfter(v time.Duration) time.Duration {
	return min(max(v, time.Second), d.cfg.RetryAfterCap)
}

// backoff is how long an endpoint gets no attempt after its failures-th
// consecutive failure: its Retry-After when it sent one, otherwise the
// schedule's first steps (10 s, 1 min, then 5 min at most).
func (d *Dispatcher) backoff(failures int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return d.retryAfter(retryAfter)
	}
	return d.cfg.Schedule[min(failures-1, 2, len(d.cfg.Schedule)-1)]
}

// followUp records a disabling, a warning or a recovery, in the
// background (the command appends to the log); a disabling is asked for
// once.
func (d *Dispatcher) followUp(ctx context.Context, f followup) {
	if d.cfg.Commands == nil {
		return
	}
	ep := d.endpoint(f.s.id)
	if f.reason != "" {
		if ep.disabling {
			return
		}
		ep.disabling = true
	}
	meta := commands.Meta{Actor: Actor, Source: "system"}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		var err error
		switch {
		case f.recovered:
			_, err = d.cfg.Commands.RecoverWebhookSubscription(ctx, commands.RecoverWebhookSubscription{ShopID: f.s.shop,
				SubscriptionID: f.s.id, FailingSince: f.since}, meta)
		case f.reason != "":
			_, err = d.cfg.Commands.DisableWebhookSubscription(ctx, commands.DisableWebhookSubscription{ShopID: f.s.shop,
				SubscriptionID: f.s.id, Reason: f.reason, Status: f.status}, meta)
		default:
			_, err = d.cfg.Commands.WarnWebhookSubscription(ctx, commands.WarnWebhookSubscription{ShopID: f.s.shop,
				SubscriptionID: f.s.id, Level: f.level, FailingSince: f.since, DisableAt: f.since.Add(d.cfg.DisableAfter),
				LastReason: "failing"}, meta)
		}
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn().Err(err).Str("shop_id", f.s.shop).Str("subscription_id", f.s.id).Msg("webhook subscription follow-up")
		}
	}()
}

// answer keeps the first bytes of an answer (at most
// domain.MaxWebhookAttemptAnswer) as valid UTF-8 text.
func answer(b []byte) string {
	t := string(b)
	if !utf8.ValidString(t) {
		t = strings.ToValidUTF8(t, "\uFFFD")
	}
	if len(t) <= domain.MaxWebhookAttemptAnswer {
		return t
	}
	t = t[:domain.MaxWebhookAttemptAnswer]
	for !utf8.ValidString(t) {
		t = t[:len(t)-1]
	}
	return t
}
