// Package adminui is the admin interface merchants and agencies sign in
// to (issue 22): server-rendered HTML from embedded templates under
// /admin. This first part has the merchant users' sign-in, the
// server-side sessions (Sessions) and the account's shops with a shop
// switcher; every answer carries a strict Content-Security-Policy and
// Cache-Control: no-store, and every non-GET request passes Go's
// http.CrossOriginProtection (CSRF).
package adminui

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/limits"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// pages are the templates, one per page: each file of templates/ but the
// layout, parsed with the layout.
var pages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	files, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", f))
	}
	return out
}()

// CookieName is the session cookie's name.
const CookieName = "cgp_session"

// ContentSecurityPolicy is sent with every answer under /admin: only the
// service's own resources, no inline script or style, no framing, forms
// posted only to the service itself.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Guard is the brute-force guard sign-ins count in (auth.Authenticator:
// the API's guard).
type Guard interface {
	SignInCheck(r *http.Request) (limits.Verdict, error)
	SignInFailed(r *http.Request, answer error) error
	SignInSucceeded(r *http.Request, v limits.Verdict) error
}

// Config configures the admin interface.
type Config struct {
	Tenancy  *tenancy.Queries
	Sessions SessionStore
	Guard    Guard
	// Secure marks the session cookie Secure: set when the public URL is
	// https (a browser does not send a Secure cookie over plain http).
	Secure bool
	// Commands runs the users' commands (invitations).
	Commands *commands.Handler
	// Mail sends the invitations' e-mails (nil: no relay; the link is
	// then shown once to the inviting owner).
	Mail Mailer
	// BaseURL is the service's public address for the invitation links
	// ("": the request's own).
	BaseURL string
	// CatchUpTo waits (bounded) until the users' read model reached a
	// position.
	CatchUpTo func(ctx context.Context, pos uint64) error
	// API is the service's own HTTP handler: the interface acts through
	// it, in-process (see call).
	API http.Handler
	// CatchUp waits (bounded) until the users' read model reached the
	// log's head: a sign-in naming an unknown e-mail looks it up once more
	// after, so a user created a moment ago signs in at once. Nil: none.
	CatchUp func(ctx context.Context) error
}

// UI is the admin interface's handler set.
type UI struct {
	cfg Config
	cop *http.CrossOriginProtection
}

// New returns the admin interface.
func New(cfg Config) *UI {
	ui := &UI{cfg: cfg, cop: http.NewCrossOriginProtection()}
	ui.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ui.render(w, r, http.StatusForbidden, "error", page{Title: "Refused",
			Error: "This form was posted from another site; it was refused. Open the page again and retry."})
	}))
	return ui
}

// Routes registers the admin interface under /admin.
func (ui *UI) Routes(r *mux.Router) {
	static, _ := fs.Sub(staticFiles, "static")
	route := func(path string, h http.Handler, method string) {
		r.Handle(path, httpapi.Beta(ui.protect(h))).Methods(method)
	}
	route("/admin/static/{file:admin\\.(?:css|js)}", http.StripPrefix("/admin/static/", http.FileServerFS(static)), http.MethodGet)
	route("/admin/login", http.HandlerFunc(ui.loginPage), http.MethodGet)
	route("/admin/login", http.HandlerFunc(ui.login), http.MethodPost)
	route("/admin/logout", http.HandlerFunc(ui.logout), http.MethodPost)
	route("/admin", ui.signedIn(ui.shops), http.MethodGet)
	ui.userRoutes(route)
	route("/admin/switch", ui.signedIn(ui.switchShop), http.MethodGet)
	route("/admin/shops/{shop_id}", ui.shopRoute(shopPage{"", http.MethodGet, "", ui.shop}), http.MethodGet)
	for _, sp := range ui.shopPages() {
		route("/admin/shops/{shop_id}/"+sp.path, ui.shopRoute(sp), sp.method)
	}
}

// protect sets the security headers of every answer and refuses a
// cross-origin non-GET request (403).
func (ui *UI) protect(next http.Handler) http.Handler {
	inner := ui.cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		inner.ServeHTTP(w, r)
	})
}

type page struct {
	Title   string
	Error   string
	Notice  string
	User    *tenancy.User
	Account string
	Shops   []tenancy.AccountShop
	Shop    *tenancy.Shop
	Install tenancy.Install
	Scopes  tenancy.PlatformScopes
	// Ctx is the chosen shop's context on a shop's page.
	Ctx *shopCtx
	// Secret is a credential shown once, on the answer to the form that
	// made it, and never again.
	Secret *secret
	// Data is the page's own content.
	Data map[string]any
}

// secret is a credential shown once.
type secret struct {
	Label, Value, Note string
}

// FormKey is a fresh one-time value for a form: posted back as its
// Idempotency-Key, so a form sent twice (a double click, a resent POST)
// acts once.
func (page) FormKey() string { return newFormKey() }

func (ui *UI) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, name+".html", p); err != nil {
		httpapi.Logger(r.Context()).Error().Err(err).Str("template", name).Msg("admin page")
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

func (ui *UI) fail(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpapi.Error
	if errors.As(err, &he) && he.Status == http.StatusTooManyRequests {
		if he.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((he.RetryAfter+time.Second-1)/time.Second)))
		}
		ui.render(w, r, http.StatusTooManyRequests, "login", page{Title: "Sign in", Error: "Too many failed sign-ins from this address. Wait and retry."})
		return
	}
	if domain.ErrorCode(err) == domain.CodeNotFound {
		ui.render(w, r, http.StatusNotFound, "error", page{Title: "Not found", Error: "There is no such page or shop."})
		return
	}
	httpapi.Logger(r.Context()).Error().Err(err).Msg("admin interface")
	ui.render(w, r, http.StatusInternalServerError, "error", page{Title: "Error", Error: "Something went wrong; retry later."})
}

func (ui *UI) loginPage(w http.ResponseWriter, r *http.Request) {
	ui.render(w, r, http.StatusOK, "login", page{Title: "Sign in"})
}

// errWrongCredentials is the one answer of a failed sign-in, whether the
// e-mail is unknown or the password wrong.
var errWrongCredentials = errors.New("wrong e-mail or password")

// maxForm bounds the sign-in form's body.
const maxForm = 8 << 10

// login checks the e-mail and password. A blocked address is refused
// before any password is checked; an unknown e-mail is answered like a
// wrong password, after as long (a dummy hash is verified); each failure
// counts in the API's brute-force guard. A success starts a new session
// (the one the browser came with, if any, is deleted: ids are never
// reused) and sends the browser to /admin.
func (ui *UI) login(w http.ResponseWriter, r *http.Request) {
	v, err := ui.cfg.Guard.SignInCheck(r)
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		ui.render(w, r, http.StatusBadRequest, "login", page{Title: "Sign in", Error: "The form could not be read; retry."})
		return
	}
	email, password := r.PostForm.Get("email"), r.PostForm.Get("password")
	user, err := ui.cfg.Tenancy.UserByEmail(r.Context(), email)
	if domain.ErrorCode(err) == domain.CodeNotFound && ui.cfg.CatchUp != nil && email != "" {
		if ui.cfg.CatchUp(r.Context()) == nil {
			user, err = ui.cfg.Tenancy.UserByEmail(r.Context(), email)
		}
	}
	ok := false
	switch {
	case domain.ErrorCode(err) == domain.CodeNotFound:
		ok = auth.VerifyNobody(password)
	case err != nil:
		ui.fail(w, r, err)
		return
	default:
		ok = auth.VerifyPassword(user.PasswordHash, password)
	}
	if !ok {
		if err := ui.cfg.Guard.SignInFailed(r, errWrongCredentials); !errors.Is(err, errWrongCredentials) {
			ui.fail(w, r, err)
			return
		}
		ui.render(w, r, http.StatusUnauthorized, "login", page{Title: "Sign in", Error: "The e-mail or the password is wrong."})
		return
	}
	if err := ui.cfg.Guard.SignInSucceeded(r, v); err != nil {
		ui.fail(w, r, err)
		return
	}
	ui.startSession(w, r, user.ID)
}

// startSession signs userID in: a new session (the one the browser came
// with, if any, is deleted: ids are never reused), its cookie, and the
// browser sent to /admin.
func (ui *UI) startSession(w http.ResponseWriter, r *http.Request, userID string) {
	if c, err := r.Cookie(CookieName); err == nil {
		if err := ui.cfg.Sessions.Delete(r.Context(), c.Value); err != nil {
			ui.fail(w, r, err)
			return
		}
	}
	id, err := ui.cfg.Sessions.Create(r.Context(), userID)
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	http.SetCookie(w, ui.cookie(id, int(AbsoluteTimeout/time.Second)))
	http.Redirect(w, r, "/admin", http.StatusSeeOther)
}

func (ui *UI) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: value, Path: "/admin", MaxAge: maxAge,
		HttpOnly: true, Secure: ui.cfg.Secure, SameSite: http.SameSiteLaxMode}
}

// logout deletes the session and its cookie.
func (ui *UI) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil {
		if err := ui.cfg.Sessions.Delete(r.Context(), c.Value); err != nil {
			ui.fail(w, r, err)
			return
		}
	}
	http.SetCookie(w, ui.cookie("", -1))
	http.Redirect(w, r, "/admin/login", http.StatusSeeOther)
}

// signedIn passes the signed-in user to next, and sends anyone else to
// the sign-in page (303).
func (ui *UI) signedIn(next func(w http.ResponseWriter, r *http.Request, u *tenancy.User)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := ui.user(r)
		if err != nil {
			ui.fail(w, r, err)
			return
		}
		if u == nil {
			http.Redirect(w, r, "/admin/login", http.StatusSeeOther)
			return
		}
		next(w, r, u)
	})
}

func (ui *UI) user(r *http.Request) (*tenancy.User, error) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return nil, nil
	}
	id, err := ui.cfg.Sessions.Lookup(r.Context(), c.Value)
	if err != nil || id == "" {
		return nil, err
	}
	u, err := ui.cfg.Tenancy.UserByID(r.Context(), id)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return nil, nil
	}
	return u, err
}

// shops lists the account's shops.
func (ui *UI) shops(w http.ResponseWriter, r *http.Request, u *tenancy.User) {
	name, err := ui.cfg.Tenancy.AccountName(r.Context(), u.AccountID)
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	shops, err := ui.cfg.Tenancy.AccountShops(r.Context(), u.AccountID)
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	ui.render(w, r, http.StatusOK, "shops", page{Title: "Shops", User: u, Account: name, Shops: shops})
}

// shop shows one shop of the user's account: another account's shop is
// not found (404), exactly like a shop that does not exist.
func (ui *UI) shop(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	p := page{Notice: notice(r)}
	var err error
	if p.Install, err = ui.cfg.Tenancy.ShopInstall(r.Context(), c.Shop.ID); err != nil {
		ui.fail(w, r, err)
		return
	}
	if p.Scopes, err = ui.cfg.Tenancy.ShopPlatformScopes(r.Context(), c.Shop.ID); err != nil {
		ui.fail(w, r, err)
		return
	}
	ui.renderShop(w, r, c, http.StatusOK, "shop", c.Shop.Domain, p)
}

// switchShop opens the chosen shop of the switcher on the same section
// (GET /admin/switch?shop=…&section=…): the shop page checks the shop is
// the user's.
func (ui *UI) switchShop(w http.ResponseWriter, r *http.Request, _ *tenancy.User) {
	q := r.URL.Query()
	shop := q.Get("shop")
	if !domain.HasPrefixID(shop, domain.PrefixShop) {
		ui.fail(w, r, domain.NotFound("shop"))
		return
	}
	to := "/admin/shops/" + shop
	for _, n := range nav {
		if n.Path != "" && n.Path == q.Get("section") {
			to += "/" + n.Path
		}
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}
