package notify

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/mail"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/channels/email"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

// Alert is what one notification message says: one anomaly, or the
// anomalies of a digest.
type Alert struct {
	ShopID, ShopDomain string
	Anomalies          []AlertItem
	Digest             bool
	Reminder           int
}

// AlertItem is one anomaly of an alert.
type AlertItem struct {
	AnomalyID, Severity, Kind, Title, Summary string
	RaisedAt                                  time.Time
}

// Chat sends a chat message to a merchant's number on behalf of a shop
// (a *channels.SendError on failure).
type Chat interface {
	SendAlert(ctx context.Context, shop, number string, a Alert) error
}

// DispatcherConfig configures the Dispatcher.
type DispatcherConfig struct {
	DB       *sql.DB
	Write    func(ctx context.Context, fn func(tx *sql.Tx) error) error
	Commands *commands.Handler
	Logger   zerolog.Logger
	// Email sends the e-mails from From (nil: no e-mail is sent; those
	// deliveries wait for a relay).
	Email *email.Sender
	From  mail.Address
	// Chat sends the chat messages (nil: none).
	Chat Chat
	// OperatorEmail receives the operator's alerts.
	OperatorEmail string
	// Schedule is the delay before each retry of a failed send (30 s,
	// 2 min, 10 min, 1 h, then 6 h for as long as it fails).
	Schedule []time.Duration
	Now      func() time.Time
}

// Dispatcher sends the due deliveries.
type Dispatcher struct {
	cfg  DispatcherConfig
	wake chan struct{}
}

// NewDispatcher returns a dispatcher; Run runs it.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	if len(cfg.Schedule) == 0 {
		cfg.Schedule = []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Dispatcher{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Wake makes the dispatcher look for due deliveries now.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run sends due deliveries until ctx ends, looking at least every second
// (the clock may be a test's).
func (d *Dispatcher) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.wake:
		case <-t.C:
		}
		if err := d.dispatch(ctx); err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn().Err(err).Msg("notification dispatch")
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(time.Second)
	}
}

// due is a due delivery with its anomaly.
type due struct {
	id, shop, channel string
	reminder          int
	attempts          int
	acknowledged      bool
	item              AlertItem
}

// dispatch sends the due deliveries: a P1 (or a reminder) alone, the
// others as one digest per shop and channel.
func (d *Dispatcher) dispatch(ctx context.Context) error {
	now := d.cfg.Now()
	rows, err := d.cfg.DB.QueryContext(ctx, `SELECT o.delivery_id, o.shop_id, o.channel, o.reminder, o.attempts, a.acknowledged,
		a.anomaly_id, a.severity, a.kind, a.title, a.summary, a.raised_at
		FROM ntf_outbox o JOIN ntf_anomalies a ON a.anomaly_id = o.anomaly_id
		WHERE o.state = 'queued' AND o.due_at <= ? ORDER BY o.due_at LIMIT 500`, now.UnixMicro())
	if err != nil {
		return fmt.Errorf("due notifications: %w", err)
	}
	var list []due
	for rows.Next() {
		var x due
		var raised int64
		if err := rows.Scan(&x.id, &x.shop, &x.channel, &x.reminder, &x.attempts, &x.acknowledged, &x.item.AnomalyID, &x.item.Severity,
			&x.item.Kind, &x.item.Title, &x.item.Summary, &raised); err != nil {
			rows.Close()
			return fmt.Errorf("due notifications: %w", err)
		}
		x.item.RaisedAt = time.UnixMicro(raised).UTC()
		list = append(list, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("due notifications: %w", err)
	}
	groups := map[string][]due{}
	var order []string
	for _, x := range list {
		key := x.shop + "\x00" + x.channel
		if x.item.Severity == domain.SeverityP1 || x.reminder > 0 {
			key += "\x00" + x.id // alone
		}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], x)
	}
	for _, k := range order {
		if err := d.deliver(ctx, groups[k], now); err != nil {
			return err
		}
	}
	return nil
}

// deliver sends one message for g (one shop and channel).
func (d *Dispatcher) deliver(ctx context.Context, g []due, now time.Time) error {
	first := g[0]
	digest := first.item.Severity != domain.SeverityP1 && first.reminder == 0
	var s shopSettings
	if first.shop != "" {
		var err error
		if s, err = settingsOf(ctx, d.cfg.DB, first.shop); err != nil {
			return err
		}
		if digest {
			if quiet, until := s.Settings.Quiet(now); quiet {
				return d.mark(ctx, g, `due_at = ?`, until.UnixMicro())
			}
		}
	}
	a := Alert{ShopID: first.shop, ShopDomain: s.Domain, Digest: digest, Reminder: first.reminder}
	for _, x := range g {
		a.Anomalies = append(a.Anomalies, x.item)
	}
	sent, err := d.send(ctx, first.channel, s, a)
	if err != nil {
		se := channels.Classify(err)
		if !se.Retryable {
			d.cfg.Logger.Warn().Str("shop_id", first.shop).Str("channel", first.channel).Str("code", se.Code).Msg("notification refused for good")
			return d.mark(ctx, g, `state = 'failed', last_error = ?, attempts = attempts + 1`, se.Code)
		}
		delay := d.cfg.Schedule[min(first.attempts, len(d.cfg.Schedule)-1)]
		d.cfg.Logger.Info().Str("shop_id", first.shop).Str("channel", first.channel).Str("code", se.Code).Int("attempt", first.attempts+1).
			Msg("notification send failed, retrying")
		return d.mark(ctx, g, `due_at = ?, last_error = ?, attempts = attempts + 1`, now.Add(max(delay, se.RetryAfter)).UnixMicro(), se.Code)
	}
	if sent {
		ids := make([]string, len(g))
		for i, x := range g {
			ids[i] = x.item.AnomalyID
		}
		sort.Strings(ids)
		delivery := first.id
		if len(g) > 1 {
			delivery = domain.IDFromExternal(PrefixDelivery, "notification-digest", first.shop, first.channel+"\x00"+strings.Join(ids, ","))
		}
		if _, err := d.cfg.Commands.RecordNotificationsSent(ctx, commands.RecordNotificationsSent{Sent: domain.NotificationsSent{
			DeliveryID: delivery, ShopID: first.shop, Channel: first.channel, AnomalyIDs: ids, Digest: digest, Reminder: first.reminder,
			SentAt: now.UTC()}}, commands.Meta{Actor: "system:notify", Source: "system"}); err != nil {
			return err
		}
	}
	return d.cfg.Write(ctx, func(tx *sql.Tx) error {
		for _, x := range g {
			reason := ""
			if !sent {
				reason = "no_address"
			}
			if err := exec(ctx, tx, `UPDATE ntf_outbox SET state = ?, last_error = ? WHERE delivery_id = ? AND state = 'queued'`,
				stateDone, reason, x.id); err != nil {
				return err
			}
			if sent && !x.acknowledged {
				if err := remind(ctx, tx, x.shop, x.channel, x.item.AnomalyID, x.item.Severity, x.reminder, now); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// mark updates g's rows still queued with set.
func (d *Dispatcher) mark(ctx context.Context, g []due, set string, args ...any) error {
	return d.cfg.Write(ctx, func(tx *sql.Tx) error {
		for _, x := range g {
			if err := exec(ctx, tx, `UPDATE ntf_outbox SET `+set+` WHERE delivery_id = ? AND state = 'queued'`,
				append(slices.Clone(args), x.id)...); err != nil {
				return err
			}
		}
		return nil
	})
}

// errNoRelay is a delivery that waits for a relay to be configured.
var errNoRelay = channels.NewSendError("no_relay", true, 0, errors.New("no SMTP relay is configured"))

// send sends a on channel and tells whether it went anywhere (false: the
// shop has no address on the channel).
func (d *Dispatcher) send(ctx context.Context, channel string, s shopSettings, a Alert) (bool, error) {
	switch channel {
	case domain.NotifyEmail:
		to := s.emails()
		if a.ShopID == "" {
			to = nil
			if d.cfg.OperatorEmail != "" {
				to = []string{d.cfg.OperatorEmail}
			}
		}
		if len(to) == 0 {
			return false, nil
		}
		if d.cfg.Email == nil {
			return false, errNoRelay
		}
		subject, text := render(a)
		body := "<pre style=\"font-family:sans-serif;white-space:pre-wrap\">" + html.EscapeString(text) + "</pre>"
		for _, addr := range to {
			if _, err := d.cfg.Email.Send(ctx, email.Message{From: d.cfg.From, To: mail.Address{Address: addr}, Subject: subject, Text: text,
				HTML: body,
				Date: d.cfg.Now(), Headers: map[string]string{"X-Service-Notification": "1"}}); err != nil {
				return false, err
			}
		}
		return true, nil
	case domain.NotifyChat:
		if s.Settings.ChatNumber == "" || d.cfg.Chat == nil || a.ShopID == "" {
			return false, nil
		}
		return true, d.cfg.Chat.SendAlert(ctx, a.ShopID, s.Settings.ChatNumber, a)
	}
	return false, nil
}

// render writes an alert's e-mail subject and text.
func render(a Alert) (string, string) {
	where := a.ShopDomain
	if a.ShopID == "" {
		where = "the platform"
	}
	var b strings.Builder
	var subject string
	switch {
	case len(a.Anomalies) == 1:
		x := a.Anomalies[0]
		subject = "[" + x.Severity + "] " + x.Title
		if a.Reminder > 0 {
			subject = "[" + x.Severity + ", reminder] " + x.Title
		}
	default:
		subject = fmt.Sprintf("%d alerts for %s", len(a.Anomalies), where)
	}
	fmt.Fprintf(&b, "Alerts for %s:\r\n\r\n", where)
	for _, x := range a.Anomalies {
		fmt.Fprintf(&b, "[%s] %s\r\n", x.Severity, x.Title)
		if x.Summary != "" {
			fmt.Fprintf(&b, "%s\r\n", x.Summary)
		}
		fmt.Fprintf(&b, "Raised %s (%s, %s)\r\n\r\n", x.RaisedAt.Format(time.RFC1123), x.Kind, x.AnomalyID)
	}
	if a.ShopID != "" {
		b.WriteString("Read them in the admin API: GET /api/v1/notifications.\r\n")
	}
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(subject), b.String()
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
