package main

import (
	"net/http"

	"github.com/gorilla/mux"
)

// mountCatalog registers the admin API's catalog endpoints on r; idem is
// the Idempotency-Key middleware for writes.
func mountCatalog(a *App, r *mux.Router, idem func(http.Handler) http.Handler) {}
