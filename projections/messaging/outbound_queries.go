package messaging

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/readmodel"
)

// Sent is a message of the message log: one the service sent (Channel,
// Intent and what sent it are set), or one a provider reported on that the
// service did not send (only the statuses are known).
type Sent struct {
	ShopID, MessageID, CustomerID, Channel, Intent string
	Provider, ProviderMessageID                    string
	CampaignID, JourneyID, EnrollmentID, Flow      string
	Step                                           int
	// Status is the message's state: skipped, failed, read, delivered
	// or sent, the furthest it reached (failed wins).
	Status, SkipReason, ErrorCode, ErrorTitle string
	SentAt, DeliveredAt, OpenedAt, FailedAt   time.Time
	SkippedAt, UpdatedAt                      time.Time
	// Pos is the log position of the message's first record.
	Pos int64
}

// MessageKey is a place in the message log, newest first.
type MessageKey struct {
	Pos int64  `json:"pos"`
	ID  string `json:"id"`
}

// MessageFilter selects messages of a shop; empty fields select all.
type MessageFilter struct {
	ShopID, CustomerID, CampaignID, JourneyID, Flow, Channel, Status string
	After                                                            *MessageKey
	Limit                                                            int
}

// statusExpr derives a row's status from its columns.
const statusExpr = `CASE WHEN failed_at IS NOT NULL THEN 'failed' WHEN opened_at IS NOT NULL THEN 'read'
	WHEN delivered_at IS NOT NULL THEN 'delivered' WHEN skipped_at IS NOT NULL THEN 'skipped' ELSE 'sent' END`

const sentColumns = `shop_id, message_id, customer_id, channel, source, intent, provider, provider_message_id, campaign_id, journey_id,
	enrollment_id, flow, step, ` + statusExpr + `, skip_reason, error_code, error_title, sent_at, delivered_at, opened_at, failed_at,
	skipped_at, updated_at, created_pos`

func scanSent(s readmodel.Scanner) (Sent, error) {
	var m Sent
	var source string
	var sent, delivered, opened, failed, skipped sql.NullInt64
	var updated int64
	err := s.Scan(&m.ShopID, &m.MessageID, &m.CustomerID, &m.Channel, &source, &m.Intent, &m.Provider, &m.ProviderMessageID,
		&m.CampaignID, &m.JourneyID, &m.EnrollmentID, &m.Flow, &m.Step, &m.Status, &m.SkipReason, &m.ErrorCode, &m.ErrorTitle,
		&sent, &delivered, &opened, &failed, &skipped, &updated, &m.Pos)
	if m.Channel == "" { // a report on a message the service did not send
		m.Channel, m.Provider, m.ProviderMessageID = channelOf(source), source, m.MessageID
	}
	m.SentAt, m.DeliveredAt, m.OpenedAt = readmodel.NullTime(sent), readmodel.NullTime(delivered), readmodel.NullTime(opened)
	m.FailedAt, m.SkippedAt, m.UpdatedAt = readmodel.NullTime(failed), readmodel.NullTime(skipped), readmodel.Time(updated)
	return m, err
}

// channelOf is the channel of a status report's source: whatsapp, or a
// provider's (SMS).
func channelOf(source string) string {
	if strings.HasPrefix(source, "provider:") {
		return "sms"
	}
	return source
}

// Messages lists a shop's message log, newest first, filtered.
func (q *Queries) Messages(ctx context.Context, f MessageFilter) ([]Sent, *MessageKey, error) {
	conds, args := []string{"shop_id = ?"}, []any{f.ShopID}
	add := func(cond, v string) {
		if v != "" {
			conds, args = append(conds, cond), append(args, v)
		}
	}
	add("customer_id = ?", f.CustomerID)
	// The literal terms let SQLite use the partial indexes.
	add("campaign_id = ? AND campaign_id <> ''", f.CampaignID)
	add("journey_id = ? AND journey_id <> ''", f.JourneyID)
	add("flow = ?", f.Flow)
	add("channel = ?", f.Channel)
	add("("+statusExpr+") = ?", f.Status)
	if f.After != nil {
		conds, args = append(conds, "(created_pos, message_id) < (?, ?)"), append(args, f.After.Pos, f.After.ID)
	}
	args = append(args, f.Limit+1)
	query := fmt.Sprintf(`SELECT %s FROM message_log WHERE %s ORDER BY created_pos DESC, message_id DESC LIMIT ?`,
		sentColumns, strings.Join(conds, " AND "))
	rows, err := readmodel.List(ctx, q.db, "messages", scanSent, query, args...)
	if err != nil {
		return nil, nil, err
	}
	return readmodel.CutPage(rows, f.Limit, func(m *Sent) MessageKey { return MessageKey{Pos: m.Pos, ID: m.MessageID} })
}

// SentMessage returns one message of a shop's log by the service's id.
func (q *Queries) SentMessage(ctx context.Context, shop, id string) (*Sent, error) {
	m, err := scanSent(q.db.QueryRowContext(ctx, `SELECT `+sentColumns+` FROM message_log WHERE shop_id = ? AND message_id = ?`, shop, id))
	if err := readmodel.FindError(err, "message"); err != nil {
		return nil, err
	}
	return &m, nil
}

// CampaignCounts are the outcomes of a campaign's messages so far: sent
// (accepted by the provider), delivered, read (opened), failed (refused,
// or reported failed after sending), skipped (not sent: consent withdrawn
// or no address since the snapshot) and opted out (skipped for consent).
type CampaignCounts struct {
	Sent, Delivered, Read, Failed, Skipped, OptedOut int
}

// CampaignCounts returns the counts of a shop's campaigns (a campaign
// with no message yet is absent).
func (q *Queries) CampaignCounts(ctx context.Context, shop string, ids ...string) (map[string]CampaignCounts, error) {
	out := make(map[string]CampaignCounts, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{shop}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := q.db.QueryContext(ctx, `SELECT campaign_id, sent, delivered, read, failed, skipped, opted_out FROM campaign_message_counts
		WHERE shop_id = ? AND campaign_id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read campaign counts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var c CampaignCounts
		if err := rows.Scan(&id, &c.Sent, &c.Delivered, &c.Read, &c.Failed, &c.Skipped, &c.OptedOut); err != nil {
			return nil, fmt.Errorf("read campaign counts: %w", err)
		}
		out[id] = c
	}
	return out, rows.Err()
}
