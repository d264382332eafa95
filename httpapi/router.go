package httpapi

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"
)

// Stability marks a route's handler with its X-Service-Stability: pass
// Stable or Beta to Handle, or wrap a handler directly:
//
//	r.Handle("/api/v1/customers", httpapi.Stable(h)).Methods(http.MethodGet)
type Stability func(h http.Handler) http.Handler

// Stable marks h as an endpoint of the interface specification: every
// response of its route carries X-Service-Stability: stable, errors of
// router middlewares included when the router comes from NewRouter. Make it
// the outermost wrapper of the route's handler (Stable(auth(h)), not
// auth(Stable(h))) so that the router finds it.
func Stable(h http.Handler) http.Handler { return &routeHandler{stability: "stable", next: h} }

// Beta marks h as an endpoint we added beyond the specification, until it is
// promoted: X-Service-Stability: beta.
func Beta(h http.Handler) http.Handler { return &routeHandler{stability: "beta", next: h} }

// NewRouter returns a gorilla/mux router set up for the Stack: an unknown
// path answers 404 not_found and a known path with the wrong method 405
// method_not_allowed (with an Allow header), both in the error envelope; a
// matched route reports its path template to the access log and metrics, and
// its stability as X-Service-Stability before any other middleware runs, so
// errors from authentication middlewares carry it too.
func NewRouter() *mux.Router {
	r := mux.NewRouter()
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		WriteError(w, req, &Error{Status: http.StatusNotFound, Code: CodeNotFound,
			Message: "no such path"})
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if allow := allowedMethods(r, req); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
		}
		WriteError(w, req, MethodNotAllowed())
	})
	r.Use(routeInfo)
	return r
}

// Handle registers h for method and path (a mux template such as
// "/api/v1/customers/{customer_id}") on r, with its stability. Every response
// of the route carries X-Service-Stability, errors included.
func Handle(r *mux.Router, stability Stability, method, path string, h http.Handler) *mux.Route {
	return r.Handle(path, stability(h)).Methods(method)
}

// HandleFunc is Handle for a handler function.
func HandleFunc(r *mux.Router, stability Stability, method, path string, f http.HandlerFunc) *mux.Route {
	return Handle(r, stability, method, path, f)
}

// routeHandler carries a route's stability; routeInfo finds it on the
// matched route, and it sets the header itself too in case the router was not
// made by NewRouter.
type routeHandler struct {
	stability string
	next      http.Handler
}

func (h *routeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(HeaderStability, h.stability)
	h.next.ServeHTTP(w, r)
}

// routeInfo is the first mux middleware: it runs after matching and before
// every other middleware of the route.
func routeInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if route := mux.CurrentRoute(r); route != nil {
			if st := stateFrom(r.Context()); st != nil {
				st.route, _ = route.GetPathTemplate()
			}
			if rh, ok := route.GetHandler().(*routeHandler); ok {
				w.Header().Set(HeaderStability, rh.stability)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// allowedMethods lists the methods the router would accept for req's path.
func allowedMethods(router *mux.Router, req *http.Request) []string {
	var allow []string
	for _, m := range [...]string{http.MethodGet, http.MethodHead, http.MethodPost,
		http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		probe := req.WithContext(req.Context())
		probe.Method = m
		var match mux.RouteMatch
		if router.Match(probe, &match) && match.MatchErr == nil {
			allow = append(allow, m)
		}
	}
	return allow
}
