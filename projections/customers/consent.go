package customers

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
)

// Marketing consent per channel (issue 17), folded in the customers
// projector's own transaction: the platform's states straight from the
// customer snapshots (no event, no command per snapshot: a second command
// per customer webhook is what the first design paid for at ingestion,
// docs/decisions.md), and the service's own decisions from
// CustomerConsentChanged. One row per customer and channel keeps the most
// recent decision: a candidate replaces the row when its decision time is
// not before the row's (ties go to the later event).

// consentRow is a row of customer_consents.
type consentRow struct {
	Customer, Channel, Shop string
	State, Source           string
	MessageID               string
	DecidedAt, Version      int64
}

func consentKey(customer, channel string) string { return customer + "\x00" + channel }

// consentCandidate folds a decision into the customer's row of channel.
func (f *folding) consentCandidate(shop, customer, channel, state, source, messageID string, at time.Time, pos int64) {
	if customer == "" || state == "" {
		return
	}
	k := consentKey(customer, channel)
	row, ok := f.r.consents[k]
	decided := at.UnixMicro()
	if ok && (row.Shop != shop || decided < row.DecidedAt) {
		return
	}
	if ok && row.State == state && row.Source == source && row.MessageID == messageID && row.DecidedAt == decided {
		return // the same decision again (a repeated snapshot): nothing to write
	}
	if !ok {
		row = &consentRow{Customer: customer, Channel: channel, Shop: shop}
		f.r.consents[k] = row
	}
	row.State, row.Source, row.MessageID, row.DecidedAt, row.Version = state, source, messageID, decided, pos
	f.dirtyK[k] = true
}

// profileConsent folds a snapshot's platform states: e-mail from
// email_marketing_consent (or accepts_marketing in events recorded before
// the states were kept: true is subscribed, false tells nothing), SMS from
// sms_marketing_consent; each at its consent_updated_at, else the
// snapshot's updated time, else when the event occurred.
func (f *folding) profileConsent(shop, customer string, p *domain.CustomerProfile, e *projections.DecodedEvent) {
	when := func(t time.Time) time.Time {
		switch {
		case !t.IsZero():
			return t
		case !p.PlatformUpdated.IsZero():
			return p.PlatformUpdated
		}
		return e.OccurredAt
	}
	pos := int64(e.Position)
	email := p.EmailConsent
	if email == "" && p.AcceptsMarketing {
		email = domain.ConsentSubscribed
	}
	f.consentCandidate(shop, customer, domain.ChannelEmail, email, domain.ConsentSourcePlatform, "", when(p.EmailConsentAt), pos)
	f.consentCandidate(shop, customer, domain.ChannelSMS, p.SMSConsent, domain.ConsentSourcePlatform, "", when(p.SMSConsentAt), pos)
}

// eraseConsent forgets every consent row of a customer.
func (f *folding) eraseConsent(shop, customer string) {
	if customer == "" {
		return
	}
	for _, ch := range domain.ConsentChannels() {
		k := consentKey(customer, ch)
		delete(f.r.consents, k)
		delete(f.dirtyK, k)
	}
	f.erasedK[customer] = shop
}

const consentColumns = `customer_id, channel, shop_id, state, source, message_id, decided_at, version`

// loadConsents reads the consent rows of customers into r.
func loadConsents(ctx context.Context, tx *sql.Tx, r *rows, customers []string) error {
	return inChunks(customers, func(args []any, marks string) error {
		rs, err := tx.QueryContext(ctx, `SELECT `+consentColumns+` FROM customer_consents WHERE customer_id IN (`+marks+`)`, args...)
		if err != nil {
			return fmt.Errorf("load customer consents: %w", err)
		}
		defer rs.Close()
		for rs.Next() {
			k := &consentRow{}
			if err := rs.Scan(&k.Customer, &k.Channel, &k.Shop, &k.State, &k.Source, &k.MessageID, &k.DecidedAt, &k.Version); err != nil {
				return fmt.Errorf("load customer consents: %w", err)
			}
			r.consents[consentKey(k.Customer, k.Channel)] = k
		}
		return rs.Err()
	})
}

// writeConsents writes the consent rows a batch changed and deletes those
// of the customers it erased.
func writeConsents(ctx context.Context, tx *sql.Tx, ch changes) error {
	for customer, shop := range ch.erasedConsents {
		if _, err := tx.ExecContext(ctx, `DELETE FROM customer_consents WHERE customer_id = ? AND shop_id = ?`, customer, shop); err != nil {
			return fmt.Errorf("erase customer consents: %w", err)
		}
	}
	ks := make([][]any, len(ch.consents))
	for i := range ch.consents {
		k := &ch.consents[i]
		ks[i] = []any{k.Customer, k.Channel, k.Shop, k.State, k.Source, k.MessageID, k.DecidedAt, k.Version}
	}
	for len(ks) > 0 {
		n := min(len(ks), rowsPerStatement)
		args := make([]any, 0, n*8)
		for _, r := range ks[:n] {
			args = append(args, r...)
		}
		if _, err := tx.ExecContext(ctx, upsert("customer_consents", "customer_id, channel", consentColumns, 8, n), args...); err != nil {
			return fmt.Errorf("write customer_consents: %w", err)
		}
		ks = ks[n:]
	}
	return nil
}
