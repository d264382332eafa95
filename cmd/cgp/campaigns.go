package main

import (
	"io"
	"net/http"

	"github.com/gorilla/mux"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/projections"
)

// campaignsProjectors returns the projectors (and reactors) of campaigns.
func campaignsProjectors(a *App) []projections.Projector { return nil }

// mountCampaigns registers the admin API's campaigns endpoints on r; idem is
// the Idempotency-Key middleware for writes.
func mountCampaigns(a *App, r *mux.Router, idem func(http.Handler) http.Handler) {}

// campaignsCommands returns the CLI commands of campaigns.
func campaignsCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command { return nil }
