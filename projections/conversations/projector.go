package conversations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// Name is the projector's stable name; its checkpoint is kept under it.
const Name = "conversations"

// Message directions and authors.
const (
	DirectionInbound  = "inbound"
	DirectionOutbound = "outbound"
	AuthorCustomer    = "customer"
	AuthorHuman       = "human"
	AuthorConcierge   = domain.AuthorConcierge
)

// StatusQueued is an outbound message's status until the sending side
// records its outcome (sent, failed, skipped).
const StatusQueued = "queued"

var migrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE conversations (
	conversation_id TEXT PRIMARY KEY,
	shop_id         TEXT NOT NULL,
	customer_id     TEXT NOT NULL,
	whatsapp_id     TEXT,
	queue           TEXT NOT NULL,
	assignee        TEXT NOT NULL DEFAULT '',
	last_message_at INTEGER NOT NULL,
	last_inbound_at INTEGER NOT NULL DEFAULT 0,
	unread_count    INTEGER NOT NULL DEFAULT 0,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	position        INTEGER NOT NULL,
	version         INTEGER NOT NULL
);
CREATE INDEX conversations_shop ON conversations (shop_id, position, conversation_id);
CREATE INDEX conversations_customer ON conversations (customer_id);
CREATE TABLE conversation_messages (
	shop_id         TEXT NOT NULL,
	message_id      TEXT NOT NULL,
	conversation_id TEXT NOT NULL,
	customer_id     TEXT NOT NULL,
	direction       TEXT NOT NULL,
	author          TEXT NOT NULL,
	type            TEXT NOT NULL,
	text            TEXT,
	status          TEXT NOT NULL DEFAULT '',
	at              INTEGER NOT NULL,
	position        INTEGER NOT NULL,
	redacted        INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (shop_id, message_id)
);
CREATE INDEX conversation_messages_thread ON conversation_messages (conversation_id, position, message_id);
CREATE INDEX conversation_messages_customer ON conversation_messages (customer_id);
`}}

// Projector returns the conversations projector.
func Projector(codec *envelope.Codec) projections.Projector {
	return projections.Projector{
		Name:       Name,
		Migrations: migrations,
		Types:      cases.Types(),
		Handle: cases.Handle(codec, func(apply projections.DecodedHandler) projections.DecodedHandler {
			return projections.WrapErrors(Name, apply)
		}),
	}
}

// cases fold each event type. Every write is idempotent: a conversation
// row carries the position of the event that last changed it (version)
// and only a later position changes it; message rows are keyed by their
// message id.
var cases = projections.NewTxCases(
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ShopErased, _ *projections.DecodedEvent) error {
		return readmodel.DeleteShopRows(ctx, tx, ev.ShopID, readmodel.ShopRows("conversations"), readmodel.ShopRows("conversation_messages"))
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.CustomerErased, _ *projections.DecodedEvent) error {
		return eraseCustomer(ctx, tx, ev)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppMessageReceived, e *projections.DecodedEvent) error {
		return receive(ctx, tx, ev, e)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ConversationReplyRequested, e *projections.DecodedEvent) error {
		pos, at := int64(e.Position), ev.RequestedAt.UnixMicro()
		if err := exec(ctx, tx, `INSERT INTO conversation_messages (shop_id, message_id, conversation_id, customer_id, direction, author,
			type, text, status, at, position, redacted) VALUES (?, ?, ?, ?, ?, ?, 'text', ?, ?, ?, ?, ?) ON CONFLICT (shop_id, message_id) DO NOTHING`,
			ev.ShopID, ev.MessageID, ev.ConversationID, ev.CustomerID, DirectionOutbound, replyAuthor(ev), readmodel.NullIfEmpty(ev.Text),
			StatusQueued, at, pos, len(e.Redacted) > 0); err != nil {
			return err
		}
		// A reply reads the conversation: its unread count starts again.
		return exec(ctx, tx, `UPDATE conversations SET unread_count = 0, last_message_at = MAX(last_message_at, ?), updated_at = ?,
			version = ? WHERE conversation_id = ? AND shop_id = ? AND version < ?`, at, at, pos, ev.ConversationID, ev.ShopID, pos)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ConversationAssigned, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		return exec(ctx, tx, `UPDATE conversations SET assignee = ?, updated_at = ?, version = ? WHERE conversation_id = ? AND shop_id = ?
			AND version < ?`, ev.Assignee, ev.AssignedAt.UnixMicro(), pos, ev.ConversationID, ev.ShopID, pos)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ConversationClosed, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		return exec(ctx, tx, `UPDATE conversations SET queue = ?, unread_count = 0, updated_at = ?, version = ? WHERE conversation_id = ?
			AND shop_id = ? AND version < ?`, domain.QueueClosed, ev.ClosedAt.UnixMicro(), pos, ev.ConversationID, ev.ShopID, pos)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.ConversationQueued, e *projections.DecodedEvent) error {
		pos := int64(e.Position)
		return exec(ctx, tx, `UPDATE conversations SET queue = ?, updated_at = ?, version = ? WHERE conversation_id = ? AND shop_id = ?
			AND version < ?`, ev.Queue, ev.QueuedAt.UnixMicro(), pos, ev.ConversationID, ev.ShopID, pos)
	}),
	projections.OnTx(func(ctx context.Context, tx *sql.Tx, ev *domain.MessageOutcomesRecorded, _ *projections.DecodedEvent) error {
		for _, o := range ev.Outcomes {
			if o.Channel != domain.ChannelWhatsApp || o.CampaignID != "" || o.JourneyID != "" || o.Flow != "" {
				continue
			}
			if err := exec(ctx, tx, `UPDATE conversation_messages SET status = ? WHERE shop_id = ? AND message_id = ? AND direction = ?`,
				o.Outcome, ev.ShopID, o.MessageID, DirectionOutbound); err != nil {
				return err
			}
		}
		return nil
	}),
)

// receive records an inbound message and opens the customer's
// conversation, or moves it: a closed conversation reopens in the
// message's queue (the shop's inbound queue), a message queued for humans
// (the shop is below pro_plus) moves it to the human queue, and otherwise
// it stays where it is (a conversation escalated to humans stays there).
func receive(ctx context.Context, tx *sql.Tx, ev *domain.WhatsAppMessageReceived, e *projections.DecodedEvent) error {
	pos, at := int64(e.Position), ev.SentAt.UnixMicro()
	id := domain.ConversationID(ev.ShopID, ev.CustomerID)
	res, err := tx.ExecContext(ctx, `INSERT INTO conversation_messages (shop_id, message_id, conversation_id, customer_id, direction, author,
		type, text, at, position, redacted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (shop_id, message_id) DO NOTHING`,
		ev.ShopID, ev.MessageID, id, ev.CustomerID, DirectionInbound, AuthorCustomer, ev.Type, ev.Text, at, pos, len(e.Redacted) > 0)
	if err != nil {
		return fmt.Errorf("insert inbound message: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // applied already
	}
	return exec(ctx, tx, `INSERT INTO conversations (conversation_id, shop_id, customer_id, whatsapp_id, queue, last_message_at,
		last_inbound_at, unread_count, created_at, updated_at, position, version) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)
		ON CONFLICT (conversation_id) DO UPDATE SET
			whatsapp_id = COALESCE(excluded.whatsapp_id, conversations.whatsapp_id),
			queue = CASE WHEN conversations.queue = 'closed' THEN excluded.queue
				WHEN excluded.queue = 'human' THEN 'human' ELSE conversations.queue END,
			last_message_at = MAX(conversations.last_message_at, excluded.last_message_at),
			last_inbound_at = MAX(conversations.last_inbound_at, excluded.last_inbound_at),
			unread_count = conversations.unread_count + 1,
			updated_at = excluded.updated_at, version = excluded.version
		WHERE conversations.version < excluded.version`,
		id, ev.ShopID, ev.CustomerID, readmodel.NullIfEmpty(ev.From), ev.Queue, at, at, at, at, pos, pos)
}

// eraseCustomer nulls the WhatsApp identity and the texts of an erased
// customer's conversations (under its platform id or the messaging
// identity of its phone).
func eraseCustomer(ctx context.Context, tx *sql.Tx, ev *domain.CustomerErased) error {
	if err := exec(ctx, tx, `UPDATE conversations SET whatsapp_id = NULL WHERE shop_id = ? AND customer_id IN (?, ?)`,
		ev.ShopID, ev.CustomerID, ev.MessagingCustomerID); err != nil {
		return fmt.Errorf("erase conversations: %w", err)
	}
	if err := exec(ctx, tx, `UPDATE conversation_messages SET text = NULL, redacted = 1 WHERE shop_id = ? AND customer_id IN (?, ?)`,
		ev.ShopID, ev.CustomerID, ev.MessagingCustomerID); err != nil {
		return fmt.Errorf("erase conversation messages: %w", err)
	}
	return nil
}

// replyAuthor is an outbound reply's author: the AI concierge's, or a
// human's.
func replyAuthor(ev *domain.ConversationReplyRequested) string {
	if ev.Author == domain.AuthorConcierge {
		return AuthorConcierge
	}
	return AuthorHuman
}

func exec(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	_, err := tx.ExecContext(ctx, query, args...)
	return err
}
