package customers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// ChannelConsent is a customer's marketing consent on one channel: the
// most recent decision, the platform's or the service's own. State is
// domain.ConsentUnknown (and Source "", DecidedAt zero) when nothing is
// known.
type ChannelConsent struct {
	State     string
	Source    string
	DecidedAt time.Time
}

// Consented tells whether the state is consent (subscribed).
func (c ChannelConsent) Consented() bool { return domain.ConsentGiven(c.State) }

// RecipientSkips counts the audience members Recipients left out, by
// reason: no consent on the channel, or consent but no address for it.
type RecipientSkips struct {
	NoConsent, NoAddress int
}

// consentIDs are the ids a customer's decisions are kept under: its own,
// and the messaging identity of its phone (WhatsApp replies are decided
// for the phone they come from).
func consentIDs(shop, id string, phone *string) []string {
	ids := []string{id}
	if phone != nil {
		if digits := domain.PhoneDigits(*phone); digits != "" {
			ids = append(ids, domain.CustomerIDFromPhone(shop, digits))
		}
	}
	return ids
}

// Consent returns a customer's consent on every channel (domain.
// ConsentChannels), the latest decision kept under its id or its phone's
// messaging identity. A customer the read model does not hold has the
// decisions kept under its id only.
func (q *Queries) Consent(ctx context.Context, shop, customerID string) (map[string]ChannelConsent, error) {
	var phone sql.NullString
	err := q.db.QueryRowContext(ctx, `SELECT phone FROM customers WHERE customer_id = ? AND shop_id = ?`, customerID, shop).Scan(&phone)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("consent: %w", err)
	}
	var p *string
	if phone.Valid {
		p = &phone.String
	}
	out := map[string]ChannelConsent{}
	for _, ch := range domain.ConsentChannels() {
		out[ch] = ChannelConsent{State: domain.ConsentUnknown}
	}
	for _, id := range consentIDs(shop, customerID, p) {
		rows, err := q.db.QueryContext(ctx, `SELECT channel, state, source, decided_at FROM customer_consents
			WHERE customer_id = ? AND shop_id = ?`, id, shop)
		if err != nil {
			return nil, fmt.Errorf("consent: %w", err)
		}
		for rows.Next() {
			var ch string
			var c ChannelConsent
			var at int64
			if err := rows.Scan(&ch, &c.State, &c.Source, &at); err != nil {
				rows.Close()
				return nil, fmt.Errorf("consent: %w", err)
			}
			c.DecidedAt = time.UnixMicro(at).UTC()
			if cur := out[ch]; cur.Source == "" || !c.DecidedAt.Before(cur.DecidedAt) {
				out[ch] = c
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("consent: %w", err)
		}
	}
	return out, nil
}

// Consented tells whether the customer may receive a marketing message on
// channel now: its latest decision on the channel is subscribed.
func (q *Queries) Consented(ctx context.Context, shop, customerID, channel string) (bool, error) {
	all, err := q.Consent(ctx, shop, customerID)
	if err != nil {
		return false, err
	}
	return all[channel].Consented(), nil
}

// decision is a consent row as Recipients reads it.
type decision struct {
	subscribed bool
	at         int64
}

// Recipients lists the audience members (f as CountAudience filters them) who may receive a
// marketing message on channel (email, sms, whatsapp): consent state subscribed on that
// channel and an address for it (email; phone for sms/whatsapp), in customer id order;
// skipped counts the others by reason.
//
// It reads the shop's decisions on the channel once (the covering index
// customer_consents_shop_channel)
// and the audience once (in customer id order), and joins them in memory.
func (q *Queries) Recipients(ctx context.Context, shop string, f domain.AudienceFilters, channel string, now time.Time) (ids []string, skipped RecipientSkips, err error) {
	if !oneOf(channel, domain.ConsentChannels()...) {
		return nil, skipped, domain.Invalid("channel", "the channel must be one of email, sms, whatsapp")
	}
	where, args, err := audienceWhere(shop, f, now)
	if err != nil {
		return nil, skipped, err
	}
	decisions := map[string]decision{}
	rows, err := q.db.QueryContext(ctx, `SELECT customer_id, state, decided_at FROM customer_consents
		WHERE shop_id = ? AND channel = ?`, shop, channel)
	if err != nil {
		return nil, skipped, fmt.Errorf("recipients: %w", err)
	}
	for rows.Next() {
		var id, state string
		var at int64
		if err := rows.Scan(&id, &state, &at); err != nil {
			rows.Close()
			return nil, skipped, fmt.Errorf("recipients: %w", err)
		}
		decisions[id] = decision{subscribed: domain.ConsentGiven(state), at: at}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, skipped, fmt.Errorf("recipients: %w", err)
	}
	if len(decisions) == 0 {
		// Nobody consented: every member is skipped for want of consent.
		n, err := q.CountAudience(ctx, shop, f, now)
		skipped.NoConsent = n
		return []string{}, skipped, err
	}
	address := "phone"
	if channel == domain.ChannelEmail {
		address = "email"
	}
	rows, err = q.db.QueryContext(ctx, `SELECT customer_id, `+address+`, phone FROM customers WHERE `+where+` ORDER BY customer_id`, args...)
	if err != nil {
		return nil, skipped, fmt.Errorf("recipients: %w", err)
	}
	defer rows.Close()
	type member struct {
		id         string
		hasAddress bool
		phone      sql.NullString
	}
	var members []member
	matched := 0 // decisions kept under a member's own id
	for rows.Next() {
		var m member
		var addr sql.NullString
		if err := rows.Scan(&m.id, &addr, &m.phone); err != nil {
			return nil, skipped, fmt.Errorf("recipients: %w", err)
		}
		m.hasAddress = addr.Valid && addr.String != "" && (address != "phone" || domain.PhoneDigits(addr.String) != "")
		if _, ok := decisions[m.id]; ok {
			matched++
		}
		members = append(members, m)
	}
	if err := rows.Err(); err != nil {
		return nil, skipped, fmt.Errorf("recipients: %w", err)
	}
	// Decisions under phone identities (WhatsApp replies) are looked up by
	// each member's phone; when every decision is a member's own, there are
	// none to hash phones for.
	byPhone := matched < len(decisions)
	ids = []string{}
	for _, m := range members {
		d, ok := decisions[m.id]
		if byPhone && m.phone.Valid {
			if digits := domain.PhoneDigits(m.phone.String); digits != "" {
				if pd, pok := decisions[domain.CustomerIDFromPhone(shop, digits)]; pok && (!ok || pd.at >= d.at) {
					d, ok = pd, true
				}
			}
		}
		switch {
		case !ok || !d.subscribed:
			skipped.NoConsent++
		case !m.hasAddress:
			skipped.NoAddress++
		default:
			ids = append(ids, m.id)
		}
	}
	return ids, skipped, nil
}

func oneOf(s string, set ...string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}
