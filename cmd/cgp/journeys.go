package main

import (
	"io"
	"net/http"

	"github.com/gorilla/mux"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/projections"
)

// journeysProjectors returns the projectors (and reactors) of journeys.
func journeysProjectors(a *App) []projections.Projector { return nil }

// mountJourneys registers the admin API's journeys endpoints on r; idem is
// the Idempotency-Key middleware for writes.
func mountJourneys(a *App, r *mux.Router, idem func(http.Handler) http.Handler) {}

// journeysCommands returns the CLI commands of journeys.
func journeysCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command { return nil }
