package main

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/attribution"
	"github.com/cgp-platform/cgp/readapi"
)

// attributionProjectors returns the projectors of attribution.
func attributionProjectors(a *App) []projections.Projector {
	return []projections.Projector{attribution.Projector(a.Codec)}
}

// mountAttribution registers the admin API's attribution endpoints on r
// (all reads); idem is unused.
func mountAttribution(a *App, r *mux.Router, _ func(http.Handler) http.Handler) {
	readapi.NewAttribution(attribution.NewQueries(a.Store.DB()), a.Auth, mustCursorCodec(a.Core), a.Runtime).Routes(r)
}
