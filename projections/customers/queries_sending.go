package customers

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/cgp-platform/cgp/domain"
)

// Contact is what sending a message to a customer needs: its address on
// the channel (e-mail, or phone for SMS and WhatsApp; "" when none), its
// names for merge fields, and whether it consents to marketing on the
// channel now, or opted out of it (unsubscribed: a transactional e-mail
// still goes to a customer who never consented, not to one who opted out).
type Contact struct {
	Address, FirstName, LastName string
	Consented, OptedOut          bool
}

// Contacts returns the contacts on channel of the shop's customers ids
// that are in the read model and not erased, in one read of the customers
// and one of their consent decisions (under their ids and their phones'
// messaging identities; the latest decision wins, as Consent decides).
func (q *Queries) Contacts(ctx context.Context, shop, channel string, ids []string) (map[string]Contact, error) {
	out := make(map[string]Contact, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, 0, len(ids)+2)
	for _, id := range ids {
		args = append(args, id)
	}
	// By primary key only: with shop_id in the WHERE clause the planner may
	// walk the shop's index instead; the shop is checked on each row.
	in := "(?" + strings.Repeat(", ?", len(ids)-1) + ")"
	rows, err := q.db.QueryContext(ctx, `SELECT customer_id, shop_id, redacted, email, phone, first_name, last_name FROM customers
		WHERE customer_id IN `+in, args...)
	if err != nil {
		return nil, fmt.Errorf("contacts: %w", err)
	}
	owner := map[string]string{} // consent id → customer id
	for rows.Next() {
		var id, owned string
		var redacted bool
		var email, phone, first, last sql.NullString
		if err := rows.Scan(&id, &owned, &redacted, &email, &phone, &first, &last); err != nil {
			rows.Close()
			return nil, fmt.Errorf("contacts: %w", err)
		}
		if owned != shop || redacted {
			continue
		}
		c := Contact{FirstName: first.String, LastName: last.String, Address: phone.String}
		if channel == domain.ChannelEmail {
			c.Address = email.String
		} else if domain.PhoneDigits(c.Address) == "" {
			c.Address = ""
		}
		out[id] = c
		var p *string
		if phone.Valid {
			p = &phone.String
		}
		for _, cid := range consentIDs(shop, id, p) {
			owner[cid] = id
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("contacts: %w", err)
	}
	if len(owner) == 0 {
		return out, nil
	}
	args = append(args[:0], shop, channel)
	for cid := range owner {
		args = append(args, cid)
	}
	rows, err = q.db.QueryContext(ctx, `SELECT customer_id, state, decided_at FROM customer_consents
		WHERE shop_id = ? AND channel = ? AND customer_id IN (?`+strings.Repeat(", ?", len(owner)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("contacts: %w", err)
	}
	defer rows.Close()
	latest := map[string]int64{}
	for rows.Next() {
		var cid, state string
		var at int64
		if err := rows.Scan(&cid, &state, &at); err != nil {
			return nil, fmt.Errorf("contacts: %w", err)
		}
		id := owner[cid]
		if prev, ok := latest[id]; ok && at < prev {
			continue
		}
		latest[id] = at
		c := out[id]
		c.Consented, c.OptedOut = domain.ConsentGiven(state), state == domain.ConsentUnsubscribed
		out[id] = c
	}
	return out, rows.Err()
}
