package sending

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
)

// Journeys is what the journey runner reads of the journeys and their
// customers.
type Journeys interface {
	// Status is the journey's status (active, paused, archived, draft).
	Status(ctx context.Context, shop, journeyID string) (string, error)
	// Steps are the steps of the journey's version.
	Steps(ctx context.Context, shop, journeyID string, version int) ([]domain.JourneyStep, error)
	// Holds evaluates a condition step for the customer, "since the
	// enrollment" meaning since.
	Holds(ctx context.Context, shop, customerID string, step domain.JourneyStep, since time.Time) (bool, error)
	// Seen tells whether the read models the runner reads (the customer,
	// the journey) have folded the log up to pos: an enrollment runs only
	// once they know what its trigger changed.
	Seen(pos uint64) bool
}

// enrollment is a due enrollment of the runner.
type enrollment struct {
	id, shop, journey, customer string
	version, step               int
	enrolledAt                  time.Time
	position                    uint64
}

// journeyContent is what a journey step's message carries in its outbox
// row.
type journeyContent struct {
	domain.MessageContent
	Template string `json:"template,omitempty"`
	Language string `json:"language,omitempty"`
	// A flow's message also carries what its links need: the order of a
	// review request with its name and the review page, the position of
	// the checkout snapshot of a cart abandonment.
	Order     string `json:"order,omitempty"`
	OrderName string `json:"order_name,omitempty"`
	Page      string `json:"page,omitempty"`
	Trigger   uint64 `json:"trigger,omitempty"`
	// ReplyTo is a conversation reply's recipient (the customer's
	// WhatsApp identity): the answer to the customer's own message goes
	// to the number that wrote, inside the customer-service window the
	// reply was checked against, without a marketing opt-in, as text.
	ReplyTo string `json:"reply_to,omitempty"`
}

// runJourneys runs the due enrollments' steps (up to 256 a call): each
// enrollment's steps run in one transaction of the sending store with the
// step it reached and the messages its send steps queue, so a restart
// neither skips nor repeats a step. A wait ends the run (the enrollment is
// due again when it ends); a paused journey holds its enrollments (looked
// at again each minute); the end of the steps, an exit step, a condition
// not met or an archived journey finish the enrollment, recorded by
// command.
func (d *Dispatcher) runJourneys(ctx context.Context, now time.Time) error {
	if d.cfg.Journeys == nil {
		return nil
	}
	if err := d.finishEnrollments(ctx); err != nil {
		return err
	}
	rows, err := d.cfg.DB.QueryContext(ctx, `SELECT enrollment_id, shop_id, journey_id, customer_id, version, step, enrolled_at, position
		FROM snd_enrollments WHERE state = 'active' AND due_at <= ? ORDER BY due_at LIMIT 256`, now.UnixMicro())
	if err != nil {
		return fmt.Errorf("due enrollments: %w", err)
	}
	var due []enrollment
	for rows.Next() {
		var e enrollment
		var at int64
		if err := rows.Scan(&e.id, &e.shop, &e.journey, &e.customer, &e.version, &e.step, &at, &e.position); err != nil {
			rows.Close()
			return fmt.Errorf("due enrollments: %w", err)
		}
		e.enrolledAt = time.UnixMicro(at)
		due = append(due, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("due enrollments: %w", err)
	}
	woke := false
	for _, e := range due {
		if !d.cfg.Journeys.Seen(e.position) {
			continue // due again at the next look, once the read models caught up
		}
		queued, err := d.runEnrollment(ctx, e, now)
		if err != nil {
			return err
		}
		woke = woke || queued
	}
	if len(due) > 0 {
		if err := d.finishEnrollments(ctx); err != nil {
			return err
		}
	}
	if woke {
		d.Wake()
	}
	return nil
}

// runEnrollment runs one enrollment's steps from where it is, and tells
// whether it queued a message.
func (d *Dispatcher) runEnrollment(ctx context.Context, e enrollment, now time.Time) (bool, error) {
	status, err := d.cfg.Journeys.Status(ctx, e.shop, e.journey)
	if err != nil {
		return false, err
	}
	next := e.step
	due := now
	state, reason := "active", ""
	type queuedMessage struct {
		ref     domain.MessageRef
		content string
	}
	var queue []queuedMessage
	switch status {
	case domain.JourneyStatusPaused, domain.JourneyStatusDraft:
		due = now.Add(time.Minute)
	case domain.JourneyStatusArchived:
		state, reason = "finishing", domain.ExitJourneyArchived
	default:
		steps, err := d.cfg.Journeys.Steps(ctx, e.shop, e.journey, e.version)
		if err != nil {
			return false, err
		}
	run:
		for {
			if next >= len(steps) {
				state = "finishing"
				break
			}
			s := steps[next]
			switch s.Type {
			case domain.StepWait:
				next++
				due = now.Add(time.Duration(s.Hours) * time.Hour)
				break run
			case domain.StepSendMessage:
				c := journeyContent{MessageContent: domain.MessageContent{Subject: s.Subject, Text: s.Text, HTML: s.HTML,
					Parameters: s.Parameters}, Template: s.Template, Language: s.Language}
				if c.Language == "" && s.Channel == domain.ChannelWhatsApp {
					c.Language = domain.DefaultLanguage
				}
				b, _ := json.Marshal(c)
				queue = append(queue, queuedMessage{ref: domain.MessageRef{MessageID: domain.JourneyMessageID(e.id, next), ShopID: e.shop,
					CustomerID: e.customer, Channel: s.Channel, Intent: domain.IntentMarketing, JourneyID: e.journey, EnrollmentID: e.id,
					Step: next}, content: string(b)})
				next++
			case domain.StepCondition:
				ok, err := d.cfg.Journeys.Holds(ctx, e.shop, e.customer, s, e.enrolledAt)
				if err != nil {
					return false, err
				}
				switch {
				case ok:
					next++
				case s.Otherwise == domain.OtherwiseSkipNext:
					next += 2
				default:
					state, reason = "finishing", domain.ExitConditionNotMet
					break run
				}
			case domain.StepExit:
				state, reason = "finishing", domain.ExitStep
				break run
			default:
				next++ // a step type this runner does not know: passed over
			}
		}
	}
	err = d.cfg.Write(ctx, func(tx *sql.Tx) error {
		for _, q := range queue {
			if _, err := tx.ExecContext(ctx, `INSERT INTO snd_outbox (message_id, shop_id, customer_id, channel, intent, journey_id,
				enrollment_id, step, state, due_at, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?) ON CONFLICT (message_id) DO NOTHING`,
				q.ref.MessageID, q.ref.ShopID, q.ref.CustomerID, q.ref.Channel, q.ref.Intent, q.ref.JourneyID, q.ref.EnrollmentID,
				q.ref.Step, now.UnixMicro(), q.content); err != nil {
				return fmt.Errorf("queue a journey message: %w", err)
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE snd_enrollments SET step = ?, due_at = ?, state = ?, reason = ? WHERE enrollment_id = ?
			AND state = 'active'`, next, due.UnixMicro(), state, reason, e.id)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("run enrollment %s: %w", e.id, err)
	}
	return len(queue) > 0, nil
}

// finishEnrollments records the end of the enrollments the runner
// finished (completed, or exited with their reason) and marks them done.
func (d *Dispatcher) finishEnrollments(ctx context.Context) error {
	rows, err := d.cfg.DB.QueryContext(ctx, `SELECT enrollment_id, shop_id, journey_id, customer_id, reason FROM snd_enrollments
		WHERE state = 'finishing'`)
	if err != nil {
		return fmt.Errorf("finished enrollments: %w", err)
	}
	var cmds []commands.FinishEnrollment
	for rows.Next() {
		var c commands.FinishEnrollment
		if err := rows.Scan(&c.EnrollmentID, &c.ShopID, &c.JourneyID, &c.CustomerID, &c.Reason); err != nil {
			rows.Close()
			return fmt.Errorf("finished enrollments: %w", err)
		}
		c.Completed = c.Reason == ""
		cmds = append(cmds, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("finished enrollments: %w", err)
	}
	for _, c := range cmds {
		if _, err := d.cfg.Commands.FinishEnrollment(ctx, c, systemMeta); err != nil {
			return err
		}
		if err := d.cfg.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE snd_enrollments SET state = 'done' WHERE enrollment_id = ? AND state = 'finishing'`,
				c.EnrollmentID)
			return err
		}); err != nil {
			return fmt.Errorf("finish enrollment %s: %w", c.EnrollmentID, err)
		}
	}
	return nil
}
