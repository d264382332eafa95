package main

import (
	"io"

	"github.com/gorilla/mux"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/projections"
)

// messagingProjectors returns the projectors of the messaging read models.
func messagingProjectors(a *App) []projections.Projector { return nil }

// mountMessaging registers the messaging receivers on r.
func mountMessaging(a *App, cfg Config, r *mux.Router) {}

// messagingCommands returns the CLI commands of messaging.
func messagingCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command { return nil }
