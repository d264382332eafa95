package main

import (
	"io"
	"net/http"

	"github.com/gorilla/mux"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/writeapi"
)

// mountJourneys registers the admin API's journeys endpoints on r; idem is
// the Idempotency-Key middleware for writes.
func mountJourneys(a *App, r *mux.Router, idem func(http.Handler) http.Handler) {
	q := journeys.NewQueries(a.Store.DB())
	readapi.NewJourneys(q, a.Customers, a.Auth, mustCursorCodec(a.Core), a.Runtime).Routes(r)
	writeapi.NewJourneys(a.Core.Commands, a.Auth, idem, q, a.Runtime).Routes(r)
}

// journeysCommands returns the CLI commands of journeys.
func journeysCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command { return nil }
