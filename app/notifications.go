package app

import (
	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/projections/notifications"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/writeapi"
)

// mountNotifications registers the in-app notifications.
func mountNotifications(a *App, r *mux.Router, idem Middleware) {
	q := notifications.NewQueries(a.Store.DB())
	readapi.NewNotifications(q, a.Auth, a.cursors, a.Runtime).Routes(r)
	writeapi.NewNotifications(a.Commands, a.Auth, idem, q).Routes(r)
}

// mountShop registers the shop's settings (GET and PATCH /api/v1/shop).
func mountShop(a *App, r *mux.Router, idem Middleware) {
	read := readapi.NewShop(a.Tenancy, notifications.NewQueries(a.Store.DB()), a.Auth, a.Runtime)
	read.Routes(r)
	writeapi.NewShop(a.Commands, a.Auth, idem, read).Routes(r)
}
