package app

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/intelligence"
	"github.com/cgp-platform/cgp/projections/campaigns"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/customers"
	intelrm "github.com/cgp-platform/cgp/projections/intelligence"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/projections/messaging"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

// diCatchUpTimeout bounds a schedule pass's wait for the read models to
// reach the log's head; a pass that times out is retried at the next tick.
const diCatchUpTimeout = 5 * time.Minute

// diInputs are the projectors a decision run and the shop list read.
var diInputs = []string{tenancy.Name, customers.Name, commerce.Name, intelrm.Name, campaigns.Name, messaging.Name}

// DIRunner returns a decision-intelligence runner over the read models of
// db, recording through cmds.
func DIRunner(cmds *commands.Handler, db *sql.DB) *intelligence.Runner {
	return &intelligence.Runner{Commands: cmds, Customers: customers.NewQueries(db), Commerce: commerce.NewQueries(db),
		Intelligence: intelrm.NewQueries(db), Campaigns: campaigns.NewQueries(db), Templates: templateStates{messaging.NewQueries(db)},
		Journeys: journeys.NewQueries(db)}
}

// DISchedule is what the daily decision-intelligence run needs.
type DISchedule struct {
	Commands *commands.Handler
	DB       *sql.DB // the read models
	Log      eventlog.Log
	// WaitFor waits until the named projectors reached pos.
	WaitFor func(ctx context.Context, pos eventlog.Position, names ...string) error
	At      time.Duration // time of day (UTC)
	Now     func() time.Time
	Logger  zerolog.Logger
}

// Job is the daily schedule as a background job: every shop whose app is
// installed (tenancy read model) runs once a day at At, each pass after the
// read models caught up with the log; a pass at once, the catch-up after
// downtime, then one a minute.
func (c DISchedule) Job(ctx context.Context) error {
	s := &intelligence.Scheduler{
		Runner: DIRunner(c.Commands, c.DB),
		Shops:  tenancy.NewQueries(c.DB),
		At:     c.At,
		CatchUp: func(ctx context.Context) error {
			head, err := c.Log.HeadPosition(ctx)
			if err != nil {
				return fmt.Errorf("log head: %w", err)
			}
			ctx, cancel := context.WithTimeout(ctx, diCatchUpTimeout)
			defer cancel()
			return c.WaitFor(ctx, head, diInputs...)
		},
		Logger: c.Logger.With().Str("job", "di_schedule").Logger(),
	}
	s.Loop(ctx, c.Now, intelligence.DefaultTick)
	return nil
}

// templateStates adapts the messaging read model to
// intelligence.TemplateStates.
type templateStates struct{ q *messaging.Queries }

func (t templateStates) TemplateState(ctx context.Context, shop, templateID string) (string, error) {
	tpl, err := t.q.Template(ctx, shop, templateID)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return tpl.State, nil
}
