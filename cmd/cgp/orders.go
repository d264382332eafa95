package main

import (
	"net/http"

	"github.com/gorilla/mux"
)

// mountOrders registers the admin API's orders endpoints on r; idem is
// the Idempotency-Key middleware for writes.
func mountOrders(a *App, r *mux.Router, idem func(http.Handler) http.Handler) {}
