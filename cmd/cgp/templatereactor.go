package main

import (
	"context"
	"fmt"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/templateholds"
)

// templateReactor returns the template reactor: on each WhatsApp template
// status event it pauses, resumes or unblocks the shop's campaigns and
// journeys using the template, through the ApplyTemplateToCampaign and
// ApplyTemplateToJourney commands (system actor, the template event's id
// as correlation id).
func templateReactor(a *App) projections.Projector {
	cmds := a.Core.Commands
	apply := func(ctx context.Context, kind, shop, id string, change domain.TemplateChange) error {
		meta := commands.Meta{RequestID: change.EventID, Actor: "system:template_holds", Source: "system"}
		var err error
		switch kind {
		case templateholds.KindCampaign:
			_, _, err = cmds.ApplyTemplateToCampaign(ctx, commands.ApplyTemplateToCampaign{ShopID: shop, CampaignID: id, Change: change}, meta)
		case templateholds.KindJourney:
			_, _, err = cmds.ApplyTemplateToJourney(ctx, commands.ApplyTemplateToJourney{ShopID: shop, JourneyID: id, Change: change}, meta)
		default:
			err = fmt.Errorf("template user of unknown kind %q", kind)
		}
		return err
	}
	return templateholds.Projector(a.Core.Codec, apply)
}
