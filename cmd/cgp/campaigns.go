package main

import (
	"io"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
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
	writeapi.NewCampaigns(a.Core.Commands, a.Auth, idem, q, app.TemplateApprovals{Q: messaging.NewQueries(a.Store.DB())}, a.Runtime).Routes(r)
}

// campaignsCommands returns the CLI commands of campaigns: none, campaigns
// are driven through the admin API.
func campaignsCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command { return nil }
