package consentreplies

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/projections"
)

// Name is the reactor's stable name.
const Name = "consent_replies"

// Record records a consent decision (the RecordConsent command) keyed by
// the source event's id. It must be idempotent. A domain validation error
// is skipped (retrying cannot help); any other error is retried by the
// runtime.
type Record func(ctx context.Context, d domain.ConsentDecision, sourceEventID string) error

// Reactor returns the reactor. With record nil it records nothing (for
// listing names only; never run it so).
func Reactor(codec *envelope.Codec, record Record) projections.Projector {
	cases := projections.NewTxCases(
		projections.OnTx(func(ctx context.Context, _ *sql.Tx, ev *domain.WhatsAppMessageReceived, e *projections.DecodedEvent) error {
			if record == nil || ev.Type != "text" || ev.Text == nil {
				return nil
			}
			state := domain.ReplyConsent(*ev.Text)
			if state == "" {
				return nil
			}
			at := ev.SentAt
			if at.IsZero() {
				at = e.OccurredAt
			}
			d := domain.ConsentDecision{ShopID: ev.ShopID, CustomerID: ev.CustomerID, Channel: domain.ChannelWhatsApp,
				State: state, Source: domain.ConsentSourceInboundReply, MessageID: ev.MessageID, At: at}
			if err := record(ctx, d, e.ID.String()); err != nil {
				if domain.ErrorCode(err) == domain.CodeInvalid {
					return nil
				}
				return fmt.Errorf("whatsapp consent of %s: %w", ev.CustomerID, err)
			}
			return nil
		}),
	)
	return projections.Projector{Name: Name, Types: cases.Types(), Handle: cases.Handle(codec, nil)}
}
