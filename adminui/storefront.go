package adminui

import (
	"net/http"
	"net/url"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/domain"
)

// The storefront page: the CORS allow-list of the public surface (add an
// origin, remove one) and the shop's public keys (create: the key shown
// once; rotate: the new key shown once; revoke). Each is the API's
// /api/v1/shop/allowed-origins or /api/v1/public-keys endpoint, called as
// the user; both need the shop settings' scope ("*"), so a read-only
// user's page says the API refused the lists.

func (ui *UI) storefrontPages() []shopPage {
	return []shopPage{
		{"storefront", http.MethodGet, "storefront", ui.storefrontPage},
		{"storefront/origins", http.MethodPost, "storefront", ui.addOrigin},
		{"storefront/origins/{host}/remove", http.MethodPost, "storefront", ui.removeOrigin},
		{"storefront/public-keys", http.MethodPost, "storefront", ui.createPublicKey},
		{"storefront/public-keys/{key_id}/rotate", http.MethodPost, "storefront", ui.rotatePublicKey},
		{"storefront/public-keys/{key_id}/revoke", http.MethodPost, "storefront", ui.revokePublicKey},
	}
}

func (ui *UI) storefrontPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.showStorefront(w, r, c, http.StatusOK, page{Notice: notice(r)}, nil)
}

// showStorefront renders the storefront page with p's notice, error or
// secret; form is the add-origin and create-key forms' values to keep
// after a refusal.
func (ui *UI) showStorefront(w http.ResponseWriter, r *http.Request, c *shopCtx, status int, p page, form url.Values) {
	origins, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/shop/allowed-origins", nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	keys, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/public-keys", nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if form == nil {
		form = url.Values{"environment": {domain.EnvLive}}
	}
	p.Data = map[string]any{"Origins": origins.List(), "OriginsError": c.refusal(origins), "Keys": keys.List(),
		"KeysError": c.refusal(keys), "Max": domain.MaxAllowedOrigins, "Form": form}
	ui.renderShop(w, r, c, status, "storefront", "Storefront", p)
}

func (ui *UI) addOrigin(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	f := r.PostForm
	a, err := ui.call(r, c.as(), http.MethodPost, "/api/v1/shop/allowed-origins", map[string]any{"origin": f.Get("origin")}, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showStorefront(w, r, c, a.Status, page{Error: "The origin was not added: " + a.Problem()}, f)
		return
	}
	host, _ := a.Attrs()["host"].(string)
	if a.Status == http.StatusOK {
		back(w, r, c, "storefront", host+" was already allowed.")
		return
	}
	back(w, r, c, "storefront", host+" is allowed: the storefront there may call the public API.")
}

func (ui *UI) removeOrigin(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	host := mux.Vars(r)["host"]
	a, err := ui.call(r, c.as(), http.MethodDelete, "/api/v1/shop/allowed-origins/"+url.PathEscape(host), nil, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showStorefront(w, r, c, a.Status, page{Error: host + ": " + a.Problem()}, nil)
		return
	}
	back(w, r, c, "storefront", host+" is no longer allowed.")
}

func (ui *UI) createPublicKey(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	f := r.PostForm
	a, err := ui.call(r, c.as(), http.MethodPost, "/api/v1/public-keys", map[string]any{"environment": f.Get("environment")}, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showStorefront(w, r, c, a.Status, page{Error: "No key was created: " + a.Problem()}, f)
		return
	}
	token, _ := a.Attrs()["token"].(string)
	ui.showStorefront(w, r, c, http.StatusCreated, page{Secret: &secret{Label: "Your new public key", Value: token,
		Note: "Put it in the storefront's pages (it is public there, but it is shown here only this once: later only its last four characters)."}}, nil)
}

func (ui *UI) rotatePublicKey(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	id := mux.Vars(r)["key_id"]
	a, err := ui.call(r, c.as(), http.MethodPost, "/api/v1/public-keys/"+url.PathEscape(id)+"/rotate", nil, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showStorefront(w, r, c, a.Status, page{Error: id + ": " + a.Problem()}, nil)
		return
	}
	token, _ := a.Attrs()["token"].(string)
	ui.showStorefront(w, r, c, http.StatusOK, page{Secret: &secret{Label: "The new key of " + id, Value: token,
		Note: "The old key stopped working: replace it in the storefront's pages. The new one is shown only this once."}}, nil)
}

func (ui *UI) revokePublicKey(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	id := mux.Vars(r)["key_id"]
	a, err := ui.call(r, c.as(), http.MethodDelete, "/api/v1/public-keys/"+url.PathEscape(id), nil, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showStorefront(w, r, c, a.Status, page{Error: id + ": " + a.Problem()}, nil)
		return
	}
	back(w, r, c, "storefront", "Public key "+id+" is revoked: it no longer works.")
}

// refusal is the API's refusal of a page's read, explained to a read-only
// user whose role lacks the scope (the shop's settings need "*").
func (c *shopCtx) refusal(a *answer) string {
	msg := a.Problem()
	if a.Status == http.StatusForbidden && !c.CanWrite() {
		msg = "Your role (read-only) does not show this: " + msg + ", which owners and admins hold."
	}
	return msg
}
