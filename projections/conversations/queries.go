package conversations

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// Queries reads the conversations read model.
type Queries struct{ db *sql.DB }

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Conversation is a row of the read model. LastInboundAt is zero when the
// customer never wrote (not the case today: inbound messages open them).
type Conversation struct {
	ID, ShopID, CustomerID string
	// WhatsAppID is the customer's WhatsApp identity, "" once erased.
	WhatsAppID                   string
	Queue, Assignee              string
	LastMessageAt, LastInboundAt time.Time
	UnreadCount                  int
	CreatedAt, UpdatedAt         time.Time
}

// Facts are what the conversation commands take of the row.
func (c *Conversation) Facts() domain.ConversationFacts {
	return domain.ConversationFacts{ID: c.ID, ShopID: c.ShopID, CustomerID: c.CustomerID, WhatsAppID: c.WhatsAppID,
		LastInboundAt: c.LastInboundAt}
}

// Message is a message of a conversation. Text is "" when the message had
// none or it was erased (Redacted).
type Message struct {
	ID, ConversationID, CustomerID, Direction, Author, Type, Text, Status string
	Redacted                                                              bool
	At                                                                    time.Time
}

// Key is a position in a list: the log position of the row's creation and
// its id.
type Key struct {
	P  int64  `json:"p"`
	ID string `json:"id"`
}

// ListQuery selects a page of a shop's conversations in the order they
// were opened; Queue and Customer filter when set.
type ListQuery struct {
	Shop, Queue, Customer string
	Desc                  bool
	After                 *Key
	Limit                 int
}

const columns = `conversation_id, shop_id, customer_id, whatsapp_id, queue, assignee, last_message_at, last_inbound_at,
	unread_count, created_at, updated_at, position`

// Conversations returns a page of a shop's conversations and the key to
// continue from when more follow.
func (q *Queries) Conversations(ctx context.Context, lq ListQuery) ([]Conversation, *Key, error) {
	dir, cmp := "ASC", ">"
	if lq.Desc {
		dir, cmp = "DESC", "<"
	}
	where, args := "shop_id = ?", []any{lq.Shop}
	if lq.Queue != "" {
		where += " AND queue = ?"
		args = append(args, lq.Queue)
	}
	if lq.Customer != "" {
		where += " AND customer_id = ?"
		args = append(args, lq.Customer)
	}
	if lq.After != nil {
		where += fmt.Sprintf(" AND (position, conversation_id) %s (?, ?)", cmp)
		args = append(args, lq.After.P, lq.After.ID)
	}
	rows, err := readmodel.List(ctx, q.db, "conversations", scanConversation, fmt.Sprintf(`SELECT `+columns+`
FROM conversations WHERE %s ORDER BY position %s, conversation_id %s LIMIT ?`, where, dir, dir), append(args, lq.Limit+1)...)
	if err != nil {
		return nil, nil, err
	}
	page, next, err := readmodel.CutPage(rows, lq.Limit, func(k *keyed) Key { return k.key })
	out := make([]Conversation, len(page))
	for i := range page {
		out[i] = page[i].c
	}
	return out, next, err
}

// Conversation returns one conversation of a shop; another shop's is not
// found.
func (q *Queries) Conversation(ctx context.Context, shop, id string) (*Conversation, error) {
	k, err := scanConversation(q.db.QueryRowContext(ctx, `SELECT `+columns+` FROM conversations WHERE shop_id = ? AND conversation_id = ?`, shop, id))
	if err := readmodel.FindError(err, "conversation"); err != nil {
		return nil, err
	}
	return &k.c, nil
}

// MessageQuery selects a page of a conversation's messages in the order
// they were recorded.
type MessageQuery struct {
	Shop, Conversation string
	Desc               bool
	After              *Key
	Limit              int
}

// Messages returns a page of a conversation's messages and the key to
// continue from when more follow.
func (q *Queries) Messages(ctx context.Context, mq MessageQuery) ([]Message, *Key, error) {
	dir, cmp := "ASC", ">"
	if mq.Desc {
		dir, cmp = "DESC", "<"
	}
	where, args := "conversation_id = ? AND shop_id = ?", []any{mq.Conversation, mq.Shop}
	if mq.After != nil {
		where += fmt.Sprintf(" AND (position, message_id) %s (?, ?)", cmp)
		args = append(args, mq.After.P, mq.After.ID)
	}
	type keyedMessage struct {
		m   Message
		key Key
	}
	rows, err := readmodel.List(ctx, q.db, "conversation messages", func(s readmodel.Scanner) (keyedMessage, error) {
		var k keyedMessage
		var text sql.NullString
		var at int64
		if err := s.Scan(&k.m.ID, &k.m.ConversationID, &k.m.CustomerID, &k.m.Direction, &k.m.Author, &k.m.Type, &text, &k.m.Status, &at,
			&k.m.Redacted, &k.key.P); err != nil {
			return k, err
		}
		k.m.Text, k.m.At, k.key.ID = text.String, readmodel.Time(at), k.m.ID
		return k, nil
	}, fmt.Sprintf(`SELECT message_id, conversation_id, customer_id, direction, author, type, text, status, at, redacted, position
FROM conversation_messages WHERE %s ORDER BY position %s, message_id %s LIMIT ?`, where, dir, dir), append(args, mq.Limit+1)...)
	if err != nil {
		return nil, nil, err
	}
	page, next, err := readmodel.CutPage(rows, mq.Limit, func(k *keyedMessage) Key { return k.key })
	out := make([]Message, len(page))
	for i := range page {
		out[i] = page[i].m
	}
	return out, next, err
}

// TextsLeft counts the customer's conversation rows still holding
// personal data (`cgp gdpr verify`: 0 once the erasure is complete).
func (q *Queries) TextsLeft(ctx context.Context, shop, customer string) (int, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM conversations WHERE shop_id = ?1 AND customer_id = ?2 AND whatsapp_id IS NOT NULL) +
		(SELECT COUNT(*) FROM conversation_messages WHERE shop_id = ?1 AND customer_id = ?2 AND text IS NOT NULL)`, shop, customer).Scan(&n); err != nil {
		return 0, fmt.Errorf("conversation texts left: %w", err)
	}
	return n, nil
}

type keyed struct {
	c   Conversation
	key Key
}

func scanConversation(s readmodel.Scanner) (keyed, error) {
	var c Conversation
	var wa sql.NullString
	var last, inbound, created, updated, pos int64
	if err := s.Scan(&c.ID, &c.ShopID, &c.CustomerID, &wa, &c.Queue, &c.Assignee, &last, &inbound, &c.UnreadCount,
		&created, &updated, &pos); err != nil {
		return keyed{}, err
	}
	c.WhatsAppID = wa.String
	c.LastMessageAt, c.LastInboundAt = readmodel.Time(last), readmodel.Time(inbound)
	c.CreatedAt, c.UpdatedAt = readmodel.Time(created), readmodel.Time(updated)
	return keyed{c: c, key: Key{P: pos, ID: c.ID}}, nil
}
