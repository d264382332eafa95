package main

import (
	"context"
	"io"
	"net/http"

	"github.com/gorilla/mux"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/writeapi"
)

// journeysProjectors returns the projectors (and reactors) of journeys:
// the journeys read model, whose projector also enrolls customers through
// the EnrollInJourney command.
func journeysProjectors(a *App) []projections.Projector {
	cmds := a.Core.Commands
	enroll := func(ctx context.Context, in domain.Enrollment) error {
		_, err := cmds.EnrollInJourney(ctx, commands.EnrollInJourney{Enrollment: in},
			commands.Meta{RequestID: in.TriggerEventID, Actor: "system:journeys", Source: "system"})
		return err
	}
	return []projections.Projector{journeys.Projector(a.Core.Codec, enroll)}
}

// mountJourneys registers the admin API's journeys endpoints on r; idem is
// the Idempotency-Key middleware for writes.
func mountJourneys(a *App, r *mux.Router, idem func(http.Handler) http.Handler) {
	q := journeys.NewQueries(a.Store.DB())
	readapi.NewJourneys(q, a.Customers, a.Auth, mustCursorCodec(a.Core), a.Runtime).Routes(r)
	writeapi.NewJourneys(a.Core.Commands, a.Auth, idem, q, a.Runtime).Routes(r)
}

// journeysCommands returns the CLI commands of journeys.
func journeysCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command { return nil }
