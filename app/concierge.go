package app

import (
	"context"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/conciergereplies"
)

// conciergeActor is the actor of the concierge reactor's commands.
const conciergeActor = "system:concierge"

// conciergeReactor is the AI concierge (projections/conciergereplies): it
// answers the inbound messages of the ai_concierge queue through
// AnswerConversation, or hands the conversation to a human through
// EscalateConversation and RaiseAnomaly (P3 conversation_escalated), and
// resolves that anomaly on a human reply or a close (system actor, the
// inbound event's id as cause and correlation id). Without commands or an
// answerer it only folds its tables.
func conciergeReactor(d Deps) projections.Projector {
	if d.Commands == nil || d.Answerer == nil {
		return conciergereplies.Projector(d.Codec, conciergereplies.Config{})
	}
	cfg := conciergeConfig(d)
	if d.ConciergeAnswers != nil {
		cfg.Wake = d.ConciergeAnswers.Wake
	}
	return conciergereplies.Projector(d.Codec, cfg)
}

// conciergeAnswersJob runs the concierge's answering job (off without an
// answerer).
func conciergeAnswersJob(a *App) func(ctx context.Context) error {
	if a.conciergeAnswers == nil {
		return nil
	}
	return a.conciergeAnswers.Run
}

// conciergeConfig is what the concierge's reactor and answering job act
// with: the answerer and the commands.
func conciergeConfig(d Deps) conciergereplies.Config {
	cmds := d.Commands
	meta := func(cause string) commands.Meta {
		return commands.Meta{RequestID: cause, Actor: conciergeActor, Source: "system"}
	}
	return conciergereplies.Config{
		Answerer:     d.Answerer,
		AnswererName: d.AnswererName,
		Reply: func(ctx context.Context, c domain.ConversationFacts, cause, text string, answered domain.ConciergeAnswered) error {
			_, err := cmds.AnswerConversation(ctx, commands.AnswerConversation{Conversation: c, InboundEventID: cause, Text: text,
				Answered: answered}, meta(cause))
			return err
		},
		Escalate: func(ctx context.Context, c domain.ConversationFacts, cause, reason string) error {
			_, err := cmds.EscalateConversation(ctx, commands.EscalateConversation{Conversation: c, InboundEventID: cause, Reason: reason},
				meta(cause))
			return err
		},
		Raise: func(ctx context.Context, draft domain.AnomalyDraft) error {
			_, _, err := cmds.RaiseAnomaly(ctx, commands.RaiseAnomaly{Draft: draft}, meta(draft.Cause))
			return err
		},
		Resolve: func(ctx context.Context, shop, key, cause string, pos uint64, reason string) error {
			_, _, err := cmds.ResolveAnomaly(ctx, commands.ResolveAnomaly{ShopID: shop, DedupeKey: key, Cause: cause, Reason: reason,
				CausePosition: pos}, meta(cause))
			return err
		},
	}
}
