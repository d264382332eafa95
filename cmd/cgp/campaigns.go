package main

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections/campaigns"
	"github.com/cgp-platform/cgp/projections/messaging"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/writeapi"
)

// mountCampaigns registers the admin API's campaigns endpoints on r; idem is
// the Idempotency-Key middleware for writes.
func mountCampaigns(a *App, r *mux.Router, idem func(http.Handler) http.Handler) {
	q := campaigns.NewQueries(a.Store.DB())
	readapi.NewCampaigns(q, a.Customers, a.Auth, mustCursorCodec(a.Core), a.Runtime, time.Now).Routes(r)
	writeapi.NewCampaigns(a.Core.Commands, a.Auth, idem, q, templateStates{messaging.NewQueries(a.Store.DB())}, a.Runtime).Routes(r)
}

// campaignsCommands returns the CLI commands of campaigns: none, campaigns
// are driven through the admin API.
func campaignsCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command { return nil }

// templateStates adapts the messaging read model to
// writeapi.TemplateStates.
type templateStates struct{ q *messaging.Queries }

func (t templateStates) TemplateApproved(ctx context.Context, shop, templateID string) (bool, error) {
	tpl, err := t.q.Template(ctx, shop, templateID)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return tpl.State == domain.TemplateApproved, nil
}
