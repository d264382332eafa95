package adminui

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/domain"
)

// The API tokens page: the shop's admin tokens with their scopes,
// creation, rotation and last use (time and address); create (the token
// shown once), rotate (the new secret shown once) and revoke. Each is the
// API's /api/v1/api-keys endpoint, called as the user.

func (ui *UI) tokenPages() []shopPage {
	return []shopPage{
		{"tokens", http.MethodGet, "tokens", ui.tokensPage},
		{"tokens", http.MethodPost, "tokens", ui.createToken},
		{"tokens/{token_id}/rotate", http.MethodPost, "tokens", ui.rotateToken},
		{"tokens/{token_id}/revoke", http.MethodPost, "tokens", ui.revokeToken},
	}
}

// tokenScopes are the scopes offered as checkboxes, "*" last (behind
// its confirmation).
func tokenScopes() []string {
	var out []string
	for _, s := range domain.AdminScopes() {
		if s != domain.ScopeAll {
			out = append(out, string(s))
		}
	}
	return out
}

func (ui *UI) tokensPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.showTokens(w, r, c, http.StatusOK, page{Notice: notice(r)}, nil)
}

// showTokens renders the tokens page with p's notice, error or secret;
// form is the create form's values to keep after a refusal.
func (ui *UI) showTokens(w http.ResponseWriter, r *http.Request, c *shopCtx, status int, p page, form url.Values) {
	a, err := ui.call(r, c.asMaster(), http.MethodGet, "/api/v1/api-keys?shop_id="+url.QueryEscape(c.Shop.ID), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if form == nil {
		form = url.Values{"environment": {domain.EnvLive}}
	}
	p.Data = map[string]any{"Tokens": a.List(), "ListError": a.Problem(), "Scopes": tokenScopes(), "Form": form}
	ui.renderShop(w, r, c, status, "tokens", "API tokens", p)
}

func (ui *UI) createToken(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	f := r.PostForm
	scopes := f["scopes"]
	if slices.Contains(scopes, string(domain.ScopeAll)) && f.Get("confirm_all") != "yes" {
		ui.showTokens(w, r, c, http.StatusUnprocessableEntity, page{Error: "A token with * can do everything on this shop: tick the confirmation to create it."}, f)
		return
	}
	if scopes == nil {
		scopes = []string{}
	}
	a, err := ui.call(r, c.asMaster(), http.MethodPost, "/api/v1/api-keys", map[string]any{
		"shop_id": c.Shop.ID, "name": f.Get("name"), "environment": f.Get("environment"), "scopes": scopes}, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showTokens(w, r, c, a.Status, page{Error: a.Problem()}, f)
		return
	}
	token, _ := a.Attrs()["token"].(string)
	ui.showTokens(w, r, c, http.StatusCreated, page{Secret: &secret{Label: "Your new token " + f.Get("name"), Value: token,
		Note: "Copy it now: it is shown only this once, and cannot be read again."}}, nil)
}

func (ui *UI) rotateToken(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	id := mux.Vars(r)["token_id"]
	a, err := ui.call(r, c.asMaster(), http.MethodPost, "/api/v1/api-keys/"+url.PathEscape(id)+"/rotate", nil, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showTokens(w, r, c, a.Status, page{Error: a.Problem()}, nil)
		return
	}
	token, _ := a.Attrs()["token"].(string)
	ui.showTokens(w, r, c, http.StatusOK, page{Secret: &secret{Label: "The new secret of " + id, Value: token,
		Note: "The old secret stopped working. Copy the new one now: it is shown only this once."}}, nil)
}

func (ui *UI) revokeToken(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	id := mux.Vars(r)["token_id"]
	a, err := ui.call(r, c.asMaster(), http.MethodDelete, "/api/v1/api-keys/"+url.PathEscape(id), nil, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showTokens(w, r, c, a.Status, page{Error: a.Problem()}, nil)
		return
	}
	back(w, r, c, "tokens", "Token "+id+" is revoked: it no longer works.")
}
