// Package consent is the marketing consent of customers per channel
// (issue 17, "Consent"): the consent reactor, which records
// MarketingConsentChanged from the platform's customer snapshots and from
// WhatsApp keyword replies, and the "consents" projector, the read model
// of the current state per customer and channel.
//
// The reactor (stable name "consent") keeps no table. For each
// CustomerCreated or CustomerUpdated that is not stale it records the
// e-mail state (email_marketing_consent, or accepts_marketing as
// subscribed/not_subscribed when the payload had none) and the SMS state
// (when the payload had one); for each inbound WhatsApp text that is an
// opt-out or opt-in keyword it records the WhatsApp state. Any other
// inbound message records nothing: a customer writing to the shop is not
// consent to marketing (WhatsApp's rules). The command decides on the
// customer's consent stream whether the state changes, and its event id
// derives from the source event and the channel, and a change from a
// source event not after the one of the channel's last change is ignored:
// redelivery, a restart from the checkpoint or a rebuild appends nothing
// twice and never undoes a later change. It never logs a
// message's text.
//
// It imports domain, envelope, projections and readmodel.
package consent

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// ReactorName is the reactor's stable name.
const ReactorName = "consent"

// Name is the read model projector's stable name.
const Name = "consents"

// Record records one consent change (the RecordMarketingConsent command),
// keyed by the source event's id. It must be idempotent. A domain
// validation error is skipped (retrying cannot help); any other error is
// retried by the runtime.
type Record func(ctx context.Context, change domain.ConsentChange, sourceEventID string) error

// Reactor returns the consent reactor. With record nil it records nothing
// (for listing names only; never run it so).
func Reactor(codec *envelope.Codec, record Record) projections.Projector {
	cases := projections.NewTxCases(
		projections.OnTx(func(ctx context.Context, _ *sql.Tx, ev *domain.CustomerCreated, e *projections.DecodedEvent) error {
			return fromProfile(ctx, ev.ShopID, ev.CustomerID, &ev.CustomerProfile, e, record)
		}),
		projections.OnTx(func(ctx context.Context, _ *sql.Tx, ev *domain.CustomerUpdated, e *projections.DecodedEvent) error {
			if ev.Stale {
				return nil
			}
			return fromProfile(ctx, ev.ShopID, ev.CustomerID, &ev.CustomerProfile, e, record)
		}),
		projections.OnTx(func(ctx context.Context, _ *sql.Tx, ev *domain.WhatsAppMessageReceived, e *projections.DecodedEvent) error {
			if ev.Type != "text" || ev.Text == nil {
				return nil
			}
			state := domain.WhatsAppReplyConsent(*ev.Text)
			if state == "" {
				return nil
			}
			return run(ctx, record, domain.ConsentChange{ShopID: ev.ShopID, CustomerID: ev.CustomerID, Channel: domain.ChannelWhatsApp,
				State: state, Source: domain.ConsentSourceWhatsAppReply, At: at(ev.SentAt, e)}, e)
		}),
	)
	return projections.Projector{Name: ReactorName, Types: cases.Types(), Handle: cases.Handle(codec, nil)}
}

func fromProfile(ctx context.Context, shop, customer string, p *domain.CustomerProfile, e *projections.DecodedEvent, record Record) error {
	email := p.EmailConsent
	if email == "" {
		email = "not_subscribed"
		if p.AcceptsMarketing {
			email = domain.ConsentSubscribed
		}
	}
	when := at(p.PlatformUpdated, e)
	if err := run(ctx, record, domain.ConsentChange{ShopID: shop, CustomerID: customer, Channel: domain.ChannelEmail,
		State: email, Source: domain.ConsentSourcePlatform, At: when}, e); err != nil {
		return err
	}
	if p.SMSConsent == "" {
		return nil
	}
	return run(ctx, record, domain.ConsentChange{ShopID: shop, CustomerID: customer, Channel: domain.ChannelSMS,
		State: p.SMSConsent, Source: domain.ConsentSourcePlatform, At: when}, e)
}

func at(t time.Time, e *projections.DecodedEvent) time.Time {
	if t.IsZero() {
		return e.RecordedAt
	}
	return t
}

func run(ctx context.Context, record Record, c domain.ConsentChange, e *projections.DecodedEvent) error {
	if record == nil {
		return nil
	}
	c.SourcePosition = uint64(e.Position)
	if err := record(ctx, c, e.ID.String()); err != nil {
		if domain.ErrorCode(err) == domain.CodeInvalid {
			return nil
		}
		return fmt.Errorf("%s consent of %s: %w", c.Channel, c.CustomerID, err)
	}
	return nil
}

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE marketing_consents (
	shop_id     TEXT NOT NULL,
	customer_id TEXT NOT NULL,
	channel     TEXT NOT NULL,
	consented   INTEGER NOT NULL,
	state       TEXT NOT NULL,
	source      TEXT NOT NULL,
	updated_at  INTEGER NOT NULL, -- Unix nanoseconds
	PRIMARY KEY (shop_id, customer_id, channel)
);
`}}

// Projector returns the consents read model: the current consent state of
// each customer per channel, from MarketingConsentChanged; an erased
// customer's rows and an erased shop's rows are deleted.
func Projector(codec *envelope.Codec) projections.Projector {
	cases := projections.NewTxCases(
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
			return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("marketing_consents"))
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerErased, _ *projections.DecodedEvent) error {
			for _, id := range append([]string{ev.CustomerID, ev.MessagingCustomerID}, ev.Subjects...) {
				if id == "" {
					continue
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM marketing_consents WHERE shop_id = ? AND customer_id = ?`, ev.ShopID, id); err != nil {
					return fmt.Errorf("erase consents: %w", err)
				}
			}
			return nil
		}),
		projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MarketingConsentChanged, _ *projections.DecodedEvent) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO marketing_consents (shop_id, customer_id, channel, consented, state, source, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shop_id, customer_id, channel) DO UPDATE SET
			consented = excluded.consented, state = excluded.state, source = excluded.source, updated_at = excluded.updated_at`,
				ev.ShopID, ev.CustomerID, ev.Channel, ev.Consented, ev.State, ev.Source, ev.At.UnixNano())
			if err != nil {
				return fmt.Errorf("consent of %s: %w", ev.CustomerID, err)
			}
			return nil
		}),
	)
	return projections.Projector{Name: Name, Migrations: migrations, Types: cases.Types(), Handle: cases.Handle(codec, nil)}
}

// State is a customer's consent on one channel.
type State struct {
	Consented bool
	State     string
	Source    string
	UpdatedAt time.Time
}

// Queries reads the consents read model.
type Queries struct{ db *sql.DB }

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Consent returns the consent per channel of a customer known under the
// given ids (the platform customer's id and the messaging identity of its
// phone): for each channel, the latest state recorded under any of them.
// A channel with no state is absent.
func (q *Queries) Consent(ctx context.Context, shop string, customerIDs ...string) (map[string]State, error) {
	out := map[string]State{}
	for _, id := range customerIDs {
		if id == "" {
			continue
		}
		rows, err := q.db.QueryContext(ctx, `SELECT channel, consented, state, source, updated_at FROM marketing_consents
		WHERE shop_id = ? AND customer_id = ?`, shop, id)
		if err != nil {
			return nil, fmt.Errorf("consent: %w", err)
		}
		for rows.Next() {
			var ch string
			var s State
			var at int64
			if err := rows.Scan(&ch, &s.Consented, &s.State, &s.Source, &at); err != nil {
				rows.Close()
				return nil, fmt.Errorf("consent: %w", err)
			}
			s.UpdatedAt = time.Unix(0, at).UTC()
			if cur, ok := out[ch]; !ok || s.UpdatedAt.After(cur.UpdatedAt) {
				out[ch] = s
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("consent: %w", err)
		}
	}
	return out, nil
}
