package main

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/writeapi"
)

// mountCatalog registers the admin API's catalog endpoints on r; idem is
// the Idempotency-Key middleware for writes.
func mountCatalog(a *App, r *mux.Router, idem func(http.Handler) http.Handler) {
	readapi.NewCatalog(a.Commerce, a.Auth, mustCursorCodec(a.Core), a.Runtime).Routes(r)
	writeapi.NewCatalog(a.Core.Commands, a.Auth, idem, a.Commerce, a.Runtime).Routes(r)
}
