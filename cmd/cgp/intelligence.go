package main

import (
	"io"
	"net/http"

	"github.com/gorilla/mux"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/projections"
)

// intelligenceProjectors returns the projectors (and reactors) of intelligence.
func intelligenceProjectors(a *App) []projections.Projector { return nil }

// mountIntelligence registers the admin API's intelligence endpoints on r; idem is
// the Idempotency-Key middleware for writes.
func mountIntelligence(a *App, r *mux.Router, idem func(http.Handler) http.Handler) {}

// intelligenceCommands returns the CLI commands of intelligence.
func intelligenceCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command { return nil }
