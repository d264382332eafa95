package main

import (
	"io"

	"github.com/gorilla/mux"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/projections"
)

// marketplacesProjectors returns the projectors of the marketplaces read models.
func marketplacesProjectors(a *App) []projections.Projector { return nil }

// mountMarketplaces registers the marketplaces receivers on r.
func mountMarketplaces(a *App, cfg Config, r *mux.Router) {}

// marketplacesCommands returns the CLI commands of marketplaces.
func marketplacesCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command { return nil }
