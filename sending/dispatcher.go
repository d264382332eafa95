package sending

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

// Recipient is what sending one message to a customer needs.
type Recipient struct {
	// Address is the customer's e-mail address (e-mail) or phone number
	// (WhatsApp, SMS); empty when it has none.
	Address             string
	FirstName, LastName string
	// Consented tells whether the customer may receive a marketing
	// message on the channel now; OptedOut whether it unsubscribed from
	// the channel (see MaySend).
	Consented, OptedOut bool
}

// MaySend tells whether a message of intent may go to the recipient on
// channel: a marketing message needs consent on the channel; a
// transactional one (the review request) goes by e-mail to anyone who did
// not unsubscribe, and by WhatsApp or SMS only with the channel's opt-in
// (WhatsApp's business policy and the SMS rules ask it of any message a
// business starts).
func (r Recipient) MaySend(intent, channel string) bool {
	if intent == domain.IntentTransactional && channel == domain.ChannelEmail {
		return !r.OptedOut
	}
	return r.Consented
}

// Directory reads what sending needs from the read models.
type Directory interface {
	// Recipients returns the details on channel of the shop's customers
	// ids that still exist (an erased customer is absent).
	Recipients(ctx context.Context, shop, channel string, ids []string) (map[string]Recipient, error)
	// ShopName is the shop's name (merge field shop_name, the e-mail
	// sender's name).
	ShopName(ctx context.Context, shop string) (string, error)
}

// Message is one message ready to send: its content merged for its
// recipient.
type Message struct {
	Ref      domain.MessageRef
	To       Recipient
	ShopName string
	// Subject, Text and HTML are an e-mail's (Text also an SMS's).
	Subject, Text, HTML string
	// Template, Language and Parameters are a WhatsApp template
	// message's.
	Template, Language string
	Parameters         []string
	// Values are the merge fields of a flow's message besides the
	// recipient's (its link).
	Values map[string]string
	// ReplyTo is the recipient of a conversation reply (its WhatsApp
	// identity), which is sent as typed: no recipient lookup, no merge.
	ReplyTo string
	// Attempt counts from 1.
	Attempt int
}

// Channel sends the messages of one channel.
type Channel interface {
	// Send sends m and returns the provider's name and its id of the
	// message. A failure is a *channels.SendError (channels.Classify
	// reads any other error as a retryable provider error). Send must
	// return when ctx ends.
	Send(ctx context.Context, m Message) (provider, id string, err error)
}

// DispatcherConfig configures the Dispatcher; zero fields take the
// defaults of setDefaults.
type DispatcherConfig struct {
	DB *sql.DB
	// Write runs fn in a write transaction of the sending store.
	Write     func(ctx context.Context, fn func(tx *sql.Tx) error) error
	Commands  *commands.Handler
	Directory Directory
	// Journeys is read by the journey runner (nil: journeys do not run).
	Journeys Journeys
	// Head is the log's head position and Applied the outbox reactor's:
	// the flows fire a run once the reactor applied the log as it was when
	// the run fell due (filled by Open; nil: flows do not run).
	Head    func(ctx context.Context) (uint64, error)
	Applied func() uint64
	// Trigger decodes the event at a position (a checkout snapshot with
	// its recovery link); filled by Open.
	Trigger func(ctx context.Context, pos uint64) (domain.Event, error)
	// Links makes the review-request links (nil: review requests are
	// skipped, no link).
	Links FlowLinks
	// Channels sends each channel's messages; a message of a channel
	// without one fails with code channel_unavailable.
	Channels map[string]Channel
	Logger   zerolog.Logger
	// Concurrency bounds the sends under way (128); PerShop bounds one
	// shop's (64), so that one shop's slow provider holds at most that
	// many.
	Concurrency, PerShop int
	// Schedule is the delay before each retry of a retryable failure
	// (30 s, 2 min, 10 min, 1 h, 6 h): a message is attempted at most
	// len(Schedule)+1 times, then fails.
	Schedule []time.Duration
	// ReconcileWindow is how long a WhatsApp message left in doubt by a
	// crash waits for its status webhook before it is sent again (10 min).
	ReconcileWindow time.Duration
	// Timeout bounds one send (30 s).
	Timeout time.Duration
	// FlushAfter is the longest a finished send waits to be recorded with
	// others (25 ms).
	FlushAfter time.Duration
	// StopDrain is how long a stop waits for the sends under way (2 s),
	// within the server's shutdown grace.
	StopDrain time.Duration
	Now       func() time.Time
}

func (c *DispatcherConfig) setDefaults() {
	if c.Concurrency <= 0 {
		c.Concurrency = 128
	}
	if c.PerShop <= 0 {
		c.PerShop = 64
	}
	if len(c.Schedule) == 0 {
		c.Schedule = []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour}
	}
	if c.ReconcileWindow <= 0 {
		c.ReconcileWindow = 10 * time.Minute
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.FlushAfter <= 0 {
		c.FlushAfter = 25 * time.Millisecond
	}
	if c.StopDrain <= 0 {
		c.StopDrain = 2 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// systemMeta is the actor of the outcomes and completions the sender
// records.
var systemMeta = commands.Meta{Actor: "system:sending", Source: "system"}

// Dispatcher sends the outbox's due messages (see the package doc).
type Dispatcher struct {
	cfg  DispatcherConfig
	wake chan struct{}
	// results carries finished sends to the loop.
	results chan result
	// Loop state (only the Run goroutine touches it).
	sending int
	perShop map[string]int
	// whatsAppInFlight counts each shop's WhatsApp sends under way (they
	// count against the number's daily allowance).
	whatsAppInFlight map[string]int
	blocked          map[string]time.Time // shop+channel → rate limited until
	campaigns        map[string]*campaign
	// unrecorded are outcomes whose record in the log failed: recorded
	// with the next batch.
	unrecorded []result
	wg         sync.WaitGroup

	mu     sync.Mutex
	notify chan struct{}
}

// NewDispatcher returns a dispatcher; Run runs it.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	cfg.setDefaults()
	return &Dispatcher{cfg: cfg, wake: make(chan struct{}, 1), results: make(chan result, cfg.Concurrency),
		perShop: map[string]int{}, whatsAppInFlight: map[string]int{}, blocked: map[string]time.Time{}, campaigns: map[string]*campaign{}, notify: make(chan struct{})}
}

// Wake makes the dispatcher look for due messages now.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// recorded returns a channel closed after the next batch of outcomes is
// written.
func (d *Dispatcher) recorded() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.notify
}

// row is an outbox row claimed for sending.
type row struct {
	ref      domain.MessageRef
	attempts int
}

// result is a finished send: its outcome to record, or a retry.
type result struct {
	row row
	// outcome is the message's outcome (Outcome set) once it has one;
	// zero for a retry at retryAt (code saying why), or for a send
	// abandoned at shutdown (code "canceled": the row stays in flight).
	outcome  domain.MessageOutcome
	retryAt  time.Time
	code     string
	blockFor time.Duration
	// slotless: the result took no sending slot (a settled doubt).
	slotless bool
}

// campaign is what sending a campaign's message needs of it.
type campaign struct {
	template, language string
	content            domain.MessageContent
}

// Run recovers what a crash left in flight, then sends until ctx ends.
// The outbox reactor must have caught up with the log before Run starts
// (Service.Run sees to it), so every outcome recorded before the crash is
// marked done.
func (d *Dispatcher) Run(ctx context.Context) error {
	defer d.wg.Wait()
	if err := d.recoverInFlight(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return err
	}
	// The sends run under their own context: a stop gives those under
	// way StopDrain to finish (their outcomes are then recorded) before
	// cancelling the rest, which stay in flight (in doubt at the next
	// start).
	sends, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	timer := time.NewTimer(0)
	defer timer.Stop()
	// Finished sends are recorded in batches: when flushAt are waiting,
	// when the oldest has waited FlushAfter, or when no other send is
	// under way. Claims are made when a quarter of the slots are free (or
	// a due time, a wake or the timer comes): few, large transactions.
	flushAt := max(d.cfg.Concurrency/2, 1)
	var pending []result
	var firstPending time.Time
	next, dispatchNow := time.Time{}, true
	for {
		if dispatchNow || d.cfg.Concurrency-d.sending >= max(d.cfg.Concurrency/4, 1) {
			n, err := d.dispatch(ctx, sends)
			if err != nil && ctx.Err() == nil {
				d.cfg.Logger.Warn().Err(err).Msg("message dispatch")
				n = d.cfg.Now().Add(time.Second)
			}
			next, dispatchNow = n, false
		}
		wait := time.Second
		if !next.IsZero() {
			wait = min(max(next.Sub(d.cfg.Now()), time.Millisecond), time.Second)
		}
		if len(pending) > 0 {
			wait = min(wait, max(d.cfg.FlushAfter-time.Since(firstPending), 0))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			// A graceful stop: the sends under way get StopDrain to finish
			// and every outcome known is recorded.
			drain := time.AfterFunc(d.cfg.StopDrain, cancelSends)
			d.wg.Wait()
			drain.Stop()
		rest:
			for {
				select {
				case r := <-d.results:
					pending = append(pending, r)
				default:
					break rest
				}
			}
			if len(pending) > 0 {
				d.finish(context.WithoutCancel(ctx), pending)
			}
			return nil
		case <-d.wake:
			dispatchNow = true
		case <-timer.C:
			dispatchNow = true
		case r := <-d.results:
			if len(pending) == 0 {
				firstPending = time.Now()
			}
			pending = append(pending, r)
		drain:
			for {
				select {
				case r := <-d.results:
					pending = append(pending, r)
				default:
					break drain
				}
			}
		}
		if len(pending) > 0 && (len(pending) >= flushAt || time.Since(firstPending) >= d.cfg.FlushAfter || len(pending) >= d.sending) {
			d.finish(ctx, pending)
			pending = nil
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// recoverInFlight turns the rows a crash left in flight into doubts: a
// WhatsApp message waits for its status webhook (ReconcileWindow); any
// other is queued again.
func (d *Dispatcher) recoverInFlight(ctx context.Context) error {
	now := d.cfg.Now()
	return d.cfg.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE snd_outbox SET
			state = CASE WHEN channel = ? THEN ? ELSE `+requeued+` END,
			due_at = CASE WHEN channel = ? THEN ? ELSE ? END
			WHERE state = 'in_flight'`, domain.ChannelWhatsApp, StateInDoubt, domain.ChannelWhatsApp,
			now.Add(d.cfg.ReconcileWindow).UnixMicro(), now.UnixMicro())
		if err != nil {
			return fmt.Errorf("recover messages in flight: %w", err)
		}
		return nil
	})
}

// dispatch records the settled doubts, queues the expired ones, claims
// due messages up to the free slots and starts their sends. It returns
// when the next message falls due (zero when none is queued).
func (d *Dispatcher) dispatch(ctx, sends context.Context) (time.Time, error) {
	now := d.cfg.Now()
	if err := d.settle(ctx, now); err != nil {
		return time.Time{}, err
	}
	if err := d.announce(ctx); err != nil {
		return time.Time{}, err
	}
	if err := d.runJourneys(ctx, now); err != nil {
		return time.Time{}, err
	}
	if err := d.runFlows(ctx, now); err != nil {
		return time.Time{}, err
	}
	free := d.cfg.Concurrency - d.sending
	if free > 0 {
		rows, err := d.claim(ctx, now, free)
		if err != nil {
			return time.Time{}, err
		}
		if err := d.start(ctx, sends, rows); err != nil {
			return time.Time{}, err
		}
	}
	var next sql.NullInt64
	if err := d.cfg.DB.QueryRowContext(ctx, `SELECT MIN(due_at) FROM snd_outbox WHERE state = 'queued'`).Scan(&next); err != nil {
		return time.Time{}, fmt.Errorf("next due message: %w", err)
	}
	var doubt sql.NullInt64
	if err := d.cfg.DB.QueryRowContext(ctx, `SELECT MIN(due_at) FROM snd_outbox WHERE state = 'in_doubt'`).Scan(&doubt); err != nil {
		return time.Time{}, fmt.Errorf("next doubt: %w", err)
	}
	switch {
	case !next.Valid && !doubt.Valid:
		return time.Time{}, nil
	case !next.Valid || (doubt.Valid && doubt.Int64 < next.Int64):
		return time.UnixMicro(doubt.Int64), nil
	}
	return time.UnixMicro(next.Int64), nil
}

// The queries on the outbox's states name them literally: SQLite uses a
// partial index only when the query's terms imply its WHERE clause,
// which a bound parameter never does.

// settle records as sent the doubts whose status webhook arrived, and
// queues again those whose window passed without one.
func (d *Dispatcher) settle(ctx context.Context, now time.Time) error {
	rows, err := d.cfg.DB.QueryContext(ctx, `SELECT `+rowColumns+`, provider_message_id FROM snd_outbox WHERE state = 'settled'`)
	if err != nil {
		return fmt.Errorf("read settled messages: %w", err)
	}
	var settled []result
	for rows.Next() {
		var r result
		var providerID string
		if err := scanRow(rows, &r.row, &providerID); err != nil {
			rows.Close()
			return err
		}
		r.slotless = true
		r.outcome = domain.MessageOutcome{MessageRef: r.row.ref, Outcome: domain.OutcomeSent, Provider: r.row.ref.Channel,
			ProviderMessageID: providerID, Attempts: r.row.attempts, At: now}
		settled = append(settled, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read settled messages: %w", err)
	}
	if len(settled) > 0 {
		d.finish(ctx, settled)
	}
	return d.cfg.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE snd_outbox SET state = `+requeued+`, due_at = ? WHERE state = 'in_doubt' AND due_at <= ?`,
			now.UnixMicro(), now.UnixMicro())
		return err
	})
}

// requeued is the state a row goes back to: queued, or held when its
// campaign is not sending (paused meanwhile).
const requeued = `(CASE WHEN campaign_id <> '' AND COALESCE((SELECT status FROM snd_campaigns c
	WHERE c.campaign_id = snd_outbox.campaign_id), '') <> 'sending' THEN 'held' ELSE 'queued' END)`

const rowColumns = `message_id, shop_id, customer_id, channel, intent, campaign_id, journey_id, enrollment_id, step, flow, attempts`

func scanRow(s interface{ Scan(...any) error }, r *row, extra ...any) error {
	dest := append([]any{&r.ref.MessageID, &r.ref.ShopID, &r.ref.CustomerID, &r.ref.Channel, &r.ref.Intent, &r.ref.CampaignID,
		&r.ref.JourneyID, &r.ref.EnrollmentID, &r.ref.Step, &r.ref.Flow, &r.attempts}, extra...)
	if err := s.Scan(dest...); err != nil {
		return fmt.Errorf("read an outbox row: %w", err)
	}
	return nil
}

// claim marks up to free due messages in flight, fairly across shops: it
// walks the shops that have due messages (a skip-scan of the index) and
// takes from each at most its free slots.
func (d *Dispatcher) claim(ctx context.Context, now time.Time, free int) ([]row, error) {
	shops, err := d.dueShops(ctx, now)
	if err != nil || len(shops) == 0 {
		return nil, err
	}
	var out []row
	for round := 0; free > 0 && len(shops) > 0 && round < 4; round++ {
		share := max(free/len(shops), 1)
		var more []string
		for _, shop := range shops {
			take := min(share, free, d.cfg.PerShop-d.perShop[shop])
			if take <= 0 {
				continue
			}
			rows, err := d.dueOf(ctx, shop, now, take)
			if err != nil {
				return nil, err
			}
			allowance, err := d.whatsAppAllowance(ctx, shop, now)
			if err != nil {
				return nil, err
			}
			var kept []row
			deferred := map[string]time.Time{}
			for _, r := range rows {
				if until, ok := d.blocked[shop+" "+r.ref.Channel]; ok && now.Before(until) {
					deferred[r.ref.Channel] = until
					continue
				}
				if r.ref.Channel == domain.ChannelWhatsApp && allowance.left >= 0 {
					if allowance.left == 0 {
						deferred[r.ref.Channel] = allowance.frees
						continue
					}
					allowance.left--
				}
				kept = append(kept, r)
			}
			for ch, until := range deferred {
				if err := d.deferChannel(ctx, shop, ch, until); err != nil {
					return nil, err
				}
			}
			if len(kept) == 0 {
				continue
			}
			if err := d.markInFlight(ctx, kept); err != nil {
				return nil, err
			}
			for _, r := range kept {
				if r.ref.Channel == domain.ChannelWhatsApp {
					d.whatsAppInFlight[shop]++
				}
			}
			d.perShop[shop] += len(kept)
			d.sending += len(kept)
			free -= len(kept)
			out = append(out, kept...)
			if len(rows) == take {
				more = append(more, shop)
			}
		}
		shops = more
	}
	return out, nil
}

// allowance is what a shop's WhatsApp number may still send now: left
// messages (-1: no limit of ours) and, when none, the time one frees.
type allowance struct {
	left  int
	frees time.Time
}

// whatsAppAllowance is the shop's WhatsApp allowance now: its number's
// daily limit (tier × quality factor) less what it sent in the last 24
// hours and what is under way. With no limit known, -1.
func (d *Dispatcher) whatsAppAllowance(ctx context.Context, shop string, now time.Time) (allowance, error) {
	var tier, rating string
	err := d.cfg.DB.QueryRowContext(ctx, `SELECT tier, rating FROM snd_numbers WHERE shop_id = ?`, shop).Scan(&tier, &rating)
	if errors.Is(err, sql.ErrNoRows) {
		return allowance{left: -1}, nil
	}
	if err != nil {
		return allowance{}, fmt.Errorf("sending number of %s: %w", shop, err)
	}
	l := domain.WhatsAppSendingLimit(tier, rating)
	if l.Unlimited {
		return allowance{left: -1}, nil
	}
	since := now.Add(-24 * time.Hour).UnixMicro()
	var sent int
	var oldest sql.NullInt64
	if err := d.cfg.DB.QueryRowContext(ctx, `SELECT COUNT(*), MIN(sent_at) FROM snd_outbox
		WHERE shop_id = ? AND channel = 'whatsapp' AND outcome = 'sent' AND sent_at > ?`, shop, since).Scan(&sent, &oldest); err != nil {
		return allowance{}, fmt.Errorf("messages sent by %s: %w", shop, err)
	}
	a := allowance{left: max(l.Limit-sent-d.whatsAppInFlight[shop], 0)}
	switch {
	case a.left > 0:
	case l.Limit == 0 || !oldest.Valid:
		// RED, or the allowance is held by sends under way: looked at
		// again in a while (a quality event looks again at once).
		a.frees = now.Add(time.Hour)
		if l.Limit > 0 {
			a.frees = now.Add(time.Second)
		}
	default:
		a.frees = time.UnixMicro(oldest.Int64).Add(24 * time.Hour)
	}
	return a, nil
}

// deferChannel makes a shop's queued messages of channel due at until at
// the earliest (its allowance is spent, or its provider asked to wait).
func (d *Dispatcher) deferChannel(ctx context.Context, shop, channel string, until time.Time) error {
	return d.cfg.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE snd_outbox SET due_at = ? WHERE state = 'queued' AND shop_id = ? AND channel = ? AND due_at < ?`,
			until.UnixMicro(), shop, channel, until.UnixMicro())
		if err != nil {
			return fmt.Errorf("defer the messages of %s: %w", shop, err)
		}
		return nil
	})
}

// announce records the new allowance of each number whose quality event
// was not announced yet (WhatsAppSendingLimitChanged: YELLOW's P2 alert,
// RED's P1).
func (d *Dispatcher) announce(ctx context.Context) error {
	rows, err := d.cfg.DB.QueryContext(ctx, `SELECT shop_id, display_phone_number, tier, rating, event_id FROM snd_numbers
		WHERE announced <> event_id`)
	if err != nil {
		return fmt.Errorf("numbers to announce: %w", err)
	}
	var cmds []commands.RecordSendingLimit
	for rows.Next() {
		var c commands.RecordSendingLimit
		if err := rows.Scan(&c.ShopID, &c.DisplayPhoneNumber, &c.Tier, &c.Rating, &c.QualityEventID); err != nil {
			rows.Close()
			return fmt.Errorf("numbers to announce: %w", err)
		}
		cmds = append(cmds, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("numbers to announce: %w", err)
	}
	for _, c := range cmds {
		if _, err := d.cfg.Commands.RecordSendingLimit(ctx, c, systemMeta); err != nil {
			return err
		}
		if err := d.cfg.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE snd_numbers SET announced = ? WHERE shop_id = ? AND event_id = ?`,
				c.QualityEventID, c.ShopID, c.QualityEventID)
			return err
		}); err != nil {
			return fmt.Errorf("announce a sending limit: %w", err)
		}
	}
	return nil
}

// dueShops lists the shops with a message due.
func (d *Dispatcher) dueShops(ctx context.Context, now time.Time) ([]string, error) {
	rows, err := d.cfg.DB.QueryContext(ctx, `WITH RECURSIVE s(shop) AS (
			SELECT MIN(shop_id) FROM snd_outbox WHERE state = 'queued'
			UNION ALL
			SELECT (SELECT MIN(shop_id) FROM snd_outbox WHERE state = 'queued' AND shop_id > s.shop) FROM s WHERE s.shop IS NOT NULL)
		SELECT shop FROM s WHERE shop IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("shops with due messages: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("shops with due messages: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func (d *Dispatcher) dueOf(ctx context.Context, shop string, now time.Time, limit int) ([]row, error) {
	rows, err := d.cfg.DB.QueryContext(ctx, `SELECT `+rowColumns+` FROM snd_outbox WHERE state = 'queued' AND shop_id = ? AND due_at <= ?
		ORDER BY due_at, message_id LIMIT ?`, shop, now.UnixMicro(), limit)
	if err != nil {
		return nil, fmt.Errorf("due messages of %s: %w", shop, err)
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var r row
		if err := scanRow(rows, &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// markInFlight claims rows before their send (committed first, so a crash
// during the send leaves them in doubt, never silently queued).
func (d *Dispatcher) markInFlight(ctx context.Context, rows []row) error {
	return d.cfg.Write(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `UPDATE snd_outbox SET state = ?, attempts = attempts + 1 WHERE message_id = ? AND state = ?`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i := range rows {
			if _, err := stmt.ExecContext(ctx, StateInFlight, rows[i].ref.MessageID, StateQueued); err != nil {
				return fmt.Errorf("claim a message: %w", err)
			}
			rows[i].attempts++
		}
		return nil
	})
}

// start reads the recipients of the claimed rows (one query per shop and
// channel) and starts each send.
func (d *Dispatcher) start(ctx, sends context.Context, rows []row) error {
	type group struct{ shop, channel string }
	groups := map[group][]row{}
	for _, r := range rows {
		g := group{r.ref.ShopID, r.ref.Channel}
		groups[g] = append(groups[g], r)
	}
	for g, rs := range groups {
		ids := make([]string, len(rs))
		for i, r := range rs {
			ids[i] = r.ref.CustomerID
		}
		started := 0
		recipients, err := d.cfg.Directory.Recipients(ctx, g.shop, g.channel, ids)
		if err == nil {
			var name string
			name, err = d.cfg.Directory.ShopName(ctx, g.shop)
			for _, r := range rs {
				if err != nil {
					break
				}
				var m Message
				m, err = d.message(ctx, r, name)
				if err != nil {
					break
				}
				to, ok := recipients[r.ref.CustomerID]
				if m.ReplyTo != "" {
					to, ok = Recipient{Address: m.ReplyTo, Consented: true}, true
				}
				m.To = to
				d.send(sends, m, ok)
				started++
			}
		}
		if err != nil {
			// The claimed rows that did not start go back to the queue in
			// a second (at least once: those started are sent).
			var back []result
			for _, r := range rs[started:] {
				back = append(back, result{row: r, retryAt: d.cfg.Now().Add(time.Second), code: "internal"})
			}
			d.finish(ctx, back)
			return err
		}
	}
	return nil
}

// message builds r's message without its recipient (merge fields are
// filled in send).
func (d *Dispatcher) message(ctx context.Context, r row, shopName string) (Message, error) {
	m := Message{Ref: r.ref, ShopName: shopName, Attempt: r.attempts}
	if r.ref.CampaignID == "" {
		var raw string
		if err := d.cfg.DB.QueryRowContext(ctx, `SELECT content FROM snd_outbox WHERE message_id = ?`, r.ref.MessageID).Scan(&raw); err != nil {
			return m, fmt.Errorf("message %s: %w", r.ref.MessageID, err)
		}
		var c journeyContent
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			return m, fmt.Errorf("message %s has nothing to send: %w", r.ref.MessageID, err)
		}
		m.Subject, m.Text, m.HTML, m.Parameters = c.Subject, c.Text, c.HTML, c.Parameters
		m.Template, m.Language, m.ReplyTo = c.Template, c.Language, c.ReplyTo
		if r.ref.Flow != "" {
			if err := d.flowValues(ctx, &m, c); err != nil {
				return m, fmt.Errorf("message %s: %w", r.ref.MessageID, err)
			}
		}
		return m, nil
	}
	c, err := d.campaign(ctx, r.ref.CampaignID)
	if err != nil {
		return m, err
	}
	m.Subject, m.Text, m.HTML, m.Parameters = c.content.Subject, c.content.Text, c.content.HTML, c.content.Parameters
	m.Template, m.Language = c.template, c.language
	return m, nil
}

func (d *Dispatcher) campaign(ctx context.Context, id string) (*campaign, error) {
	if c, ok := d.campaigns[id]; ok {
		return c, nil
	}
	var c campaign
	var content string
	err := d.cfg.DB.QueryRowContext(ctx, `SELECT template_name, template_language, content FROM snd_campaigns WHERE campaign_id = ?`, id).
		Scan(&c.template, &c.language, &content)
	if err != nil {
		return nil, fmt.Errorf("campaign %s: %w", id, err)
	}
	if content != "" {
		if err := json.Unmarshal([]byte(content), &c.content); err != nil {
			return nil, fmt.Errorf("campaign %s content: %w", id, err)
		}
	}
	if len(d.campaigns) > 1024 {
		clear(d.campaigns)
	}
	d.campaigns[id] = &c
	return &c, nil
}

// merge fills m's merge fields for its recipient.
func merge(m *Message) {
	values := map[string]string{"first_name": m.To.FirstName, "last_name": m.To.LastName,
		"full_name": strings.TrimSpace(m.To.FirstName + " " + m.To.LastName), "shop_name": m.ShopName}
	for k, v := range m.Values {
		values[k] = v
	}
	m.Subject, m.Text = domain.RenderMergeFields(m.Subject, values, nil), domain.RenderMergeFields(m.Text, values, nil)
	m.HTML = domain.RenderMergeFields(m.HTML, values, html.EscapeString)
	params := make([]string, len(m.Parameters))
	for i, p := range m.Parameters {
		params[i] = domain.RenderMergeFields(p, values, nil)
	}
	m.Parameters = params
}

// send sends m in its own goroutine (or skips it: the customer was erased,
// has no address, or withdrew consent), records the outcome in the log,
// and hands the result to the loop.
func (d *Dispatcher) send(ctx context.Context, m Message, exists bool) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.results <- d.attempt(ctx, m, exists)
	}()
}

func (d *Dispatcher) attempt(ctx context.Context, m Message, exists bool) result {
	r := result{row: row{ref: m.Ref, attempts: m.Attempt}}
	o := domain.MessageOutcome{MessageRef: m.Ref, Attempts: m.Attempt}
	switch {
	case !exists:
		o.Outcome, o.SkipReason = domain.OutcomeSkipped, domain.SkipErased
	case m.To.Address == "":
		o.Outcome, o.SkipReason = domain.OutcomeSkipped, domain.SkipNoAddress
	case !m.To.MaySend(m.Ref.Intent, m.Ref.Channel):
		o.Outcome, o.SkipReason = domain.OutcomeSkipped, domain.SkipNoConsent
	case m.Ref.Flow != "" && m.Values[m.link()] == "":
		// A flow's message without its link (the checkout's recovery
		// link erased or never sent) would ask for nothing.
		o.Outcome, o.SkipReason = domain.OutcomeSkipped, domain.SkipNoLink
	}
	if o.Outcome == "" {
		ch, ok := d.cfg.Channels[m.Ref.Channel]
		if !ok {
			o.Outcome, o.ErrorCode = domain.OutcomeFailed, "channel_unavailable"
		} else {
			if m.ReplyTo == "" {
				merge(&m)
			}
			sctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
			provider, id, err := ch.Send(sctx, m)
			cancel()
			o.Provider = provider
			switch {
			case err == nil && id == "":
				// Accepted without an id: sent, under its own id.
				o.Outcome, o.ProviderMessageID = domain.OutcomeSent, m.Ref.MessageID
			case err == nil:
				o.Outcome, o.ProviderMessageID = domain.OutcomeSent, id
			case ctx.Err() != nil:
				// Shutting down: the row stays in flight, in doubt at the
				// next start.
				r.code = "canceled"
				return r
			default:
				se := channels.Classify(err)
				if se.Code == channels.CodeRateLimited {
					r.blockFor = max(se.RetryAfter, time.Second)
				}
				if se.Retryable && m.Attempt <= len(d.cfg.Schedule) {
					delay := max(d.cfg.Schedule[m.Attempt-1], min(se.RetryAfter, time.Hour))
					d.cfg.Logger.Info().Str("shop_id", m.Ref.ShopID).Str("message_id", m.Ref.MessageID).Str("code", se.Code).
						Int("attempt", m.Attempt).Msg("message send failed, retrying")
					r.retryAt, r.code = d.cfg.Now().Add(delay), se.Code
					return r
				}
				o.Outcome, o.ErrorCode = domain.OutcomeFailed, se.Code
			}
		}
	}
	o.At = d.cfg.Now()
	r.outcome = o
	return r
}

// finish records a batch of results: the outcomes in the log (one event
// per shop and up to domain.MaxOutcomesPerEvent outcomes), then the rows
// done or queued again for a retry in the store; it frees their slots and
// completes the campaigns they finished. Outcomes whose record failed
// keep their slots and are recorded again with the next batch (the sends
// are never made again for them).
func (d *Dispatcher) finish(ctx context.Context, batch []result) {
	now := d.cfg.Now()
	batch = append(d.unrecorded, batch...)
	d.unrecorded = nil
	byShop := map[string][]int{}
	for i, r := range batch {
		if r.outcome.Outcome != "" {
			byShop[r.row.ref.ShopID] = append(byShop[r.row.ref.ShopID], i)
		}
		if r.blockFor > 0 {
			d.blocked[r.row.ref.ShopID+" "+r.row.ref.Channel] = now.Add(r.blockFor)
		}
	}
	failed := map[int]bool{}
	for shop, idx := range byShop {
		for len(idx) > 0 {
			n := min(len(idx), domain.MaxOutcomesPerEvent)
			part := idx[:n]
			idx = idx[n:]
			outcomes := make([]domain.MessageOutcome, len(part))
			for k, i := range part {
				outcomes[k] = batch[i].outcome
			}
			if _, err := d.cfg.Commands.RecordMessageOutcomes(ctx, commands.RecordMessageOutcomes{ShopID: shop, Outcomes: outcomes},
				systemMeta); err != nil {
				if ctx.Err() == nil {
					d.cfg.Logger.Error().Err(err).Str("shop_id", shop).Int("outcomes", n).Msg("recording message outcomes")
				}
				for _, i := range part {
					failed[i] = true
				}
			}
		}
	}
	campaigns := map[string]string{}
	var written []result
	for i, r := range batch {
		if failed[i] {
			d.unrecorded = append(d.unrecorded, r)
			continue
		}
		written = append(written, r)
		if r.row.ref.CampaignID != "" {
			campaigns[r.row.ref.CampaignID] = r.row.ref.ShopID
		}
	}
	err := d.cfg.Write(ctx, func(tx *sql.Tx) error {
		for _, r := range written {
			var err error
			switch {
			case r.outcome.Outcome != "":
				_, err = tx.ExecContext(ctx, `UPDATE snd_outbox SET state = ?, outcome = ?, last_error = ?, sent_at = ?,
					provider_message_id = CASE WHEN ? <> '' THEN ? ELSE provider_message_id END WHERE message_id = ?`,
					StateDone, r.outcome.Outcome, r.outcome.ErrorCode, r.outcome.At.UnixMicro(), r.outcome.ProviderMessageID,
					r.outcome.ProviderMessageID, r.row.ref.MessageID)
			case !r.retryAt.IsZero():
				_, err = tx.ExecContext(ctx, `UPDATE snd_outbox SET state = `+requeued+`, due_at = ?, last_error = ? WHERE message_id = ? AND state = ?`,
					r.retryAt.UnixMicro(), r.code, r.row.ref.MessageID, StateInFlight)
			}
			if err != nil {
				return fmt.Errorf("record a send: %w", err)
			}
		}
		return nil
	})
	for _, r := range written {
		if r.slotless {
			continue
		}
		d.perShop[r.row.ref.ShopID]--
		if d.perShop[r.row.ref.ShopID] <= 0 {
			delete(d.perShop, r.row.ref.ShopID)
		}
		if r.row.ref.Channel == domain.ChannelWhatsApp {
			d.whatsAppInFlight[r.row.ref.ShopID]--
			if d.whatsAppInFlight[r.row.ref.ShopID] <= 0 {
				delete(d.whatsAppInFlight, r.row.ref.ShopID)
			}
		}
		d.sending--
	}
	if err != nil {
		// The outcomes are in the log: the outbox reactor marks their rows
		// done; a retry's row stays in flight until the next start.
		if ctx.Err() == nil {
			d.cfg.Logger.Error().Err(err).Int("results", len(written)).Msg("recording sends")
		}
		return
	}
	for id, shop := range campaigns {
		if err := d.complete(ctx, shop, id); err != nil && ctx.Err() == nil {
			d.cfg.Logger.Error().Err(err).Str("campaign_id", id).Msg("completing a campaign")
		}
	}
	d.mu.Lock()
	close(d.notify)
	d.notify = make(chan struct{})
	d.mu.Unlock()
}

// complete completes a sending campaign whose snapshot is all queued and
// whose messages all have their outcome.
func (d *Dispatcher) complete(ctx context.Context, shop, id string) error {
	var expected, received int
	var status string
	err := d.cfg.DB.QueryRowContext(ctx, `SELECT parts_expected, parts_received, status FROM snd_campaigns WHERE campaign_id = ?`, id).
		Scan(&expected, &received, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("campaign %s: %w", id, err)
	}
	if status != domain.CampaignStatusSending || expected == 0 || received < expected {
		return nil
	}
	var open int
	// The open states are named (an index seek each), not "state <> done",
	// which would walk every done row of the campaign after each batch.
	if err := d.cfg.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM snd_outbox WHERE campaign_id = ? AND campaign_id <> ''
		AND state IN ('queued', 'held', 'in_flight', 'in_doubt', 'settled') LIMIT 1)`, id).Scan(&open); err != nil {
		return fmt.Errorf("open messages of %s: %w", id, err)
	}
	if open > 0 {
		return nil
	}
	var tally domain.CampaignTally
	rows, err := d.cfg.DB.QueryContext(ctx, `SELECT outcome, COUNT(*) FROM snd_outbox WHERE campaign_id = ? AND campaign_id <> '' GROUP BY outcome`, id)
	if err != nil {
		return fmt.Errorf("tally %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var outcome string
		var n int
		if err := rows.Scan(&outcome, &n); err != nil {
			return fmt.Errorf("tally %s: %w", id, err)
		}
		tally.Recipients += n
		switch outcome {
		case outcomeSent:
			tally.Sent = n
		case outcomeFailed:
			tally.Failed = n
		case outcomeSkipped:
			tally.Skipped = n
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("tally %s: %w", id, err)
	}
	_, err = d.cfg.Commands.CompleteCampaign(ctx, commands.CompleteCampaign{ShopID: shop, CampaignID: id, Tally: tally}, systemMeta)
	return err
}
