package adminui

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

// shopCtx is what every page of a chosen shop knows: the user, the shop,
// the account's shops (the switcher) and the unread notifications (the
// header's count).
type shopCtx struct {
	User    *tenancy.User
	Shop    *tenancy.Shop
	Shops   []tenancy.AccountShop
	Unread  int
	Section string
}

// CanWrite reports whether the user may change the shop: owners and
// admins; a read-only user reads.
func (c *shopCtx) CanWrite() bool { return c.User.Role != RoleReadOnly }

// Base is the shop's pages' base path.
func (c *shopCtx) Base() string { return "/admin/shops/" + c.Shop.ID }

// Sections are the shop's pages in the navigation.
func (c *shopCtx) Sections() []navItem { return nav }

type navItem struct{ Path, Label string }

// nav lists the shop's sections in the navigation's order.
var nav = []navItem{
	{"", "Overview"},
	{"tokens", "API tokens"},
	{"image-keys", "Image-API keys"},
	{"webhooks", "Outbound webhooks"},
	{"notifications", "Notifications"},
	{"conversations", "Conversations"},
	{"reviews", "Reviews"},
	{"storefront", "Storefront"},
	{"install", "Install and scopes"},
	{"campaigns", "Campaigns and journeys"},
	{"usage", "Usage and AI credits"},
	{"gdpr", "GDPR requests"},
	{"audit", "Audit history"},
}

// shopPage is one route of a shop's pages: path under
// /admin/shops/{shop_id}/, its method, its section in the navigation and
// its handler. A POST is refused (403) to a read-only user before its
// handler runs.
type shopPage struct {
	path, method, section string
	h                     func(w http.ResponseWriter, r *http.Request, c *shopCtx)
}

// shopPages are every shop page's routes.
func (ui *UI) shopPages() []shopPage {
	return slices.Concat(ui.tokenPages(), ui.imageKeyPages(), ui.usagePages(), ui.webhookPages(), ui.campaignPages(),
		ui.gdprPages(), ui.auditPages(), ui.notificationPages(), ui.conversationPages(), ui.reviewPages(), ui.storefrontPages(),
		ui.installPages())
}

// shopRoute serves sp for a signed-in user of the shop's account:
// another account's shop is 404, like a shop that does not exist.
func (ui *UI) shopRoute(sp shopPage) http.Handler {
	return ui.signedIn(func(w http.ResponseWriter, r *http.Request, u *tenancy.User) {
		c, err := ui.shopContext(r, u, sp.section)
		if err != nil {
			ui.fail(w, r, err)
			return
		}
		if sp.method != http.MethodGet && !c.CanWrite() {
			ui.renderShop(w, r, c, http.StatusForbidden, "error", "Not allowed", page{Error: "Your role (read-only) lets you read this shop, not change it. Ask an owner or an admin."})
			return
		}
		if sp.method != http.MethodGet {
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			if err := r.ParseForm(); err != nil {
				ui.renderShop(w, r, c, http.StatusBadRequest, "error", "Bad form", page{Error: "The form could not be read; open the page again and retry."})
				return
			}
		}
		sp.h(w, r, c)
	})
}

func (ui *UI) shopContext(r *http.Request, u *tenancy.User, section string) (*shopCtx, error) {
	s, err := ui.cfg.Tenancy.ShopByID(r.Context(), mux.Vars(r)["shop_id"])
	if err == nil && s.AccountID != u.AccountID {
		err = domain.NotFound("shop")
	}
	if err != nil {
		return nil, err
	}
	c := &shopCtx{User: u, Shop: s, Section: section}
	if c.Shops, err = ui.cfg.Tenancy.AccountShops(r.Context(), u.AccountID); err != nil {
		return nil, err
	}
	a, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/notifications?limit=1", nil, "")
	if err != nil {
		return nil, err
	}
	if m, ok := a.Doc["meta"].(map[string]any); ok {
		n, _ := m["unread_count"].(float64)
		c.Unread = int(n)
	}
	return c, nil
}

// as is the principal the user acts as on the shop.
func (c *shopCtx) as() auth.Principal { return principal(c.User, c.Shop, false) }

// asMaster is the account-level principal of the token endpoints (a
// read-only user's is a shop principal without "*": the API refuses).
func (c *shopCtx) asMaster() auth.Principal { return principal(c.User, c.Shop, true) }

// shopPageOf renders a shop page.
func (ui *UI) renderShop(w http.ResponseWriter, r *http.Request, c *shopCtx, status int, name, title string, p page) {
	p.Title, p.User, p.Ctx, p.Shop, p.Shops = title, c.User, c, c.Shop, c.Shops
	ui.render(w, r, status, name, p)
}

// back sends the browser to the shop page path after a form that acted
// (303: the reload does not post again), with a notice.
func back(w http.ResponseWriter, r *http.Request, c *shopCtx, path, notice string) {
	u := c.Base() + "/" + path
	if notice != "" {
		u += "?notice=" + url.QueryEscape(notice)
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// backAt is back, the page reading at least what the form's API call
// wrote (a: its X-Event-Position; see waitAt).
func backAt(w http.ResponseWriter, r *http.Request, c *shopCtx, path, notice string, a *answer) {
	u := c.Base() + "/" + path
	q := url.Values{}
	if notice != "" {
		q.Set("notice", notice)
	}
	if pos := a.Header.Get(httpapi.HeaderEventPosition); pos != "" {
		q.Set("at", pos)
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// notice is the page's notice from a form that acted (bounded, plain
// text: the template escapes it).
func notice(r *http.Request) string {
	n := r.URL.Query().Get("notice")
	if len(n) > 200 {
		n = n[:200]
	}
	return n
}

func newFormKey() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "ui_" + hex.EncodeToString(b)
}

// formKey is the form's one-time Idempotency-Key ("" when absent or
// not one of ours).
func formKey(r *http.Request) string {
	k := r.PostForm.Get("form_key")
	if len(k) != 35 || !strings.HasPrefix(k, "ui_") {
		return ""
	}
	return k
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	// attr reads a resource's attribute (a JSON map) by a dotted path.
	"attr": func(v any, path string) any {
		for _, k := range strings.Split(path, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			if a, ok := m["attributes"].(map[string]any); ok && k != "id" && k != "type" && k != "attributes" {
				m = a
			}
			v = m[k]
		}
		return v
	},
	// when formats an RFC 3339 time (or a time.Time) for people, in UTC.
	"when": func(v any) string {
		switch t := v.(type) {
		case string:
			p, err := time.Parse(time.RFC3339Nano, t)
			if err != nil {
				return t
			}
			return p.UTC().Format("2006-01-02 15:04:05 UTC")
		case time.Time:
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05 UTC")
		case nil:
			return ""
		}
		return fmt.Sprint(v)
	},
	// list renders a JSON list as comma-separated text.
	"list": func(v any) string {
		l, _ := v.([]any)
		out := make([]string, 0, len(l))
		for _, x := range l {
			out = append(out, fmt.Sprint(x))
		}
		return strings.Join(out, ", ")
	},
	"has": func(v any, s string) bool {
		switch l := v.(type) {
		case []string:
			return slices.Contains(l, s)
		case []any:
			return slices.Contains(l, any(s))
		}
		return false
	},
	// percent shows a rate (0.1234) as a percentage ("12.3 %").
	"percent": func(v any) string {
		f, ok := v.(float64)
		if !ok {
			return ""
		}
		return strconv.FormatFloat(f*100, 'f', 1, 64) + " %"
	},
	"str": func(v any) string {
		if v == nil {
			return ""
		}
		return fmt.Sprint(v)
	},
}
