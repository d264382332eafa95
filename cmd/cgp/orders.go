package main

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/readapi"
)

// mountOrders registers the admin API's orders endpoints on r; idem is
// the Idempotency-Key middleware for writes (the order endpoints are all
// reads: the commerce platform owns orders).
func mountOrders(a *App, r *mux.Router, _ func(http.Handler) http.Handler) {
	readapi.NewOrders(a.Commerce, a.Customers, a.Auth, mustCursorCodec(a.Core), a.Runtime).Routes(r)
}
