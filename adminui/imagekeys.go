package adminui

import (
	"net/http"
	"net/url"

	"github.com/gorilla/mux"
	"slices"
	"strings"

	"github.com/cgp-platform/cgp/domain"
)

// The image-API keys page (specification, image-API scopes, rule 6): the
// shop's image-operations keys with their stored scopes (a key from
// before scopes reads "no scopes recorded: unrestricted"), and the mint
// form: read-only scopes ticked by default, a warning as soon as the
// mutating images:write is ticked, no "*" offered at all (the API and the
// CLI still mint one for whoever asks for it there), the key shown once.
// Both are the API's /api/v1/image-keys, called as the user.

func (ui *UI) imageKeyPages() []shopPage {
	return []shopPage{
		{"image-keys", http.MethodGet, "image-keys", ui.imageKeysPage},
		{"image-keys", http.MethodPost, "image-keys", ui.mintImageKey},
		{"image-keys/{key_id}/revoke", http.MethodPost, "image-keys", ui.revokeImageKey},
	}
}

// revokeImageKey stops a key for good (DELETE /api/v1/image-keys/{id}),
// then back to the list with a notice.
func (ui *UI) revokeImageKey(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	id := mux.Vars(r)["key_id"]
	a, err := ui.call(r, c.as(), http.MethodDelete, "/api/v1/image-keys/"+url.PathEscape(id), nil, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showImageKeys(w, r, c, a.Status, page{Error: a.Problem()}, nil, "")
		return
	}
	back(w, r, c, "image-keys", "Image-API key "+id+" is revoked: it no longer works.")
}

// imageScope is a checkbox of the mint form; Warn marks a scope that lets
// the key spend the shop's AI credits.
type imageScope struct {
	Code, About string
	Warn        bool
}

// imageScopes are the mint form's choices, in catalogue order; "*" is not
// one of them.
var imageScopes = []imageScope{
	{string(domain.ImageScopeUsageRead), "read the shop's usage and AI credits", false},
	{string(domain.ImageScopeImagesRead), "read image operations and their results", false},
	{string(domain.ImageScopeImagesWrite), "run image operations, which spend the shop's AI credits", true},
}

// defaultImageForm is the mint form as first shown: the read-only scopes.
func defaultImageForm() url.Values { return url.Values{"scopes": domain.DefaultImageScopes()} }

func (ui *UI) imageKeysPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.showImageKeys(w, r, c, http.StatusOK, page{Notice: notice(r)}, nil, "")
}

// showImageKeys renders the page with p's notice, error or secret; form
// is the mint form's values to keep after a refusal (nil: the default),
// keyWarning the warning shown next to a minted key.
func (ui *UI) showImageKeys(w http.ResponseWriter, r *http.Request, c *shopCtx, status int, p page, form url.Values, keyWarning string) {
	a, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/image-keys", nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if form == nil {
		form = defaultImageForm()
	}
	listErr := a.Problem()
	if a.Status == http.StatusForbidden && !c.CanWrite() {
		listErr = "Your role (read-only) cannot see the shop's image-API keys: they are credentials, listed with * (owners and admins). " + listErr + "."
	}
	p.Data = map[string]any{"Keys": a.List(), "ListError": listErr, "Scopes": imageScopes, "Form": form,
		"WriteWarn": slices.Contains(form["scopes"], string(domain.ImageScopeImagesWrite)), "KeyWarning": keyWarning}
	ui.renderShop(w, r, c, status, "image-keys", "Image-API keys", p)
}

func (ui *UI) mintImageKey(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	f := r.PostForm
	scopes := f["scopes"]
	switch {
	case slices.Contains(scopes, string(domain.ScopeAll)):
		ui.showImageKeys(w, r, c, http.StatusUnprocessableEntity, page{Error: "This form does not mint keys with * (every scope, now and to come): choose the scopes the key needs."}, f, "")
		return
	case len(scopes) == 0:
		ui.showImageKeys(w, r, c, http.StatusUnprocessableEntity, page{Error: "Choose at least one scope: a key without any can do nothing."}, f, "")
		return
	}
	a, err := ui.call(r, c.as(), http.MethodPost, "/api/v1/image-keys", map[string]any{"scopes": scopes}, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showImageKeys(w, r, c, a.Status, page{Error: a.Problem()}, f, "")
		return
	}
	at := a.Attrs()
	key, _ := at["token"].(string)
	warning, _ := at["warning"].(string)
	if warning == "" && slices.Contains(scopes, string(domain.ImageScopeImagesWrite)) {
		warning = "scope images:write lets this key run image operations that spend the shop's AI credits"
	}
	if warning != "" {
		warning = "Careful: " + warning + ". Keep it on a server, never in a browser or an app."
	}
	ui.showImageKeys(w, r, c, http.StatusCreated, page{Secret: &secret{Label: "Your new image-API key (scopes: " + scopeText(at["scopes"]) + ")",
		Value: key, Note: "Send it as the X-API-Key header. Copy it now: it is shown only this once, and cannot be read again."}}, nil, warning)
}

// scopeText is a JSON scope list as text ("none" when empty).
func scopeText(v any) string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
