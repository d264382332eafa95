package main

import (
	"context"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/projections"
)

// The server lives in package app; these let the end-to-end tests name it
// as before.
type App = app.App

// OpenApp builds the server as serve does.
func OpenApp(ctx context.Context, cfg Config, core *Core) (*App, error) {
	return app.OpenApp(ctx, cfg, core)
}

// allProjectors are the projectors a replay rebuilds (App.AllProjectors).
func allProjectors(a *App, tenancyChanged func()) []projections.Projector {
	return a.AllProjectors(tenancyChanged)
}

// allReactors are the reactors a replay copies (App.AllReactors).
func allReactors(a *App) []projections.Projector { return a.AllReactors() }
