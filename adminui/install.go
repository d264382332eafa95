package adminui

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
)

// The install and scopes page: the shop's install state, its platform
// grant beside the scopes the app declares (missing ones marked, the
// re-consent link when needed), the features each scope powers (on, or
// why not), and the theme regression incidents (or why theme changes are
// not tracked). The grant and the features are the platform section of
// GET /api/v1/shop, the incidents GET /api/v1/seo-intelligence/incidents,
// both called as the user; the install state is the tenancy read model's,
// as on the shop's overview (the API has no install view).

func (ui *UI) installPages() []shopPage {
	return []shopPage{{"install", http.MethodGet, "install", ui.installPage}}
}

// incidentsPerPage is the incident list's page size.
const incidentsPerPage = 20

// scopeRow is one platform scope of the side-by-side table.
type scopeRow struct {
	Scope    string
	Declared bool
	// Granted is "granted", "implied" (by the grant of its write scope)
	// or "" (not granted).
	Granted string
	Missing bool
}

// scopeRows lines up the declared scopes (in the declared order) with the
// granted and implied ones, then the granted ones the app does not
// declare. A grant that is not known marks no scope missing.
func scopeRows(platform map[string]any) []scopeRow {
	strs := func(k string) []string {
		l, _ := platform[k].([]any)
		out := make([]string, 0, len(l))
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	declared, granted, implied, missing := strs("declared"), strs("granted"), strs("implied"), strs("missing")
	if platform["grant_known"] != true {
		// The API lists every declared scope as missing from a grant it
		// does not know: the page says "unknown", not "missing".
		missing = nil
	}
	row := func(s string) scopeRow {
		r := scopeRow{Scope: s, Declared: slices.Contains(declared, s), Missing: slices.Contains(missing, s)}
		switch {
		case slices.Contains(granted, s):
			r.Granted = "granted"
		case slices.Contains(implied, s):
			r.Granted = "implied"
		}
		return r
	}
	var rows []scopeRow
	for _, s := range declared {
		rows = append(rows, row(s))
	}
	for _, s := range append(granted, implied...) {
		if !slices.ContainsFunc(rows, func(r scopeRow) bool { return r.Scope == s }) {
			rows = append(rows, row(s))
		}
	}
	return rows
}

func (ui *UI) installPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	p := page{Notice: notice(r)}
	var err error
	if p.Install, err = ui.cfg.Tenancy.ShopInstall(r.Context(), c.Shop.ID); err != nil {
		ui.fail(w, r, err)
		return
	}
	shop, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/shop", nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	platform, _ := shop.Attrs()["platform"].(map[string]any)
	q := url.Values{"limit": {strconv.Itoa(incidentsPerPage)}}
	cursor := r.URL.Query().Get("cursor")
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	inc, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/seo-intelligence/incidents?"+q.Encode(), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	next := ""
	if cur := nextCursor(inc); cur != "" {
		next = c.Base() + "/install?" + url.Values{"cursor": {cur}}.Encode() + "#incidents"
	}
	meta, _ := inc.Doc["meta"].(map[string]any)
	p.Data = map[string]any{"Platform": platform, "PlatformError": c.refusal(shop), "Scopes": scopeRows(platform),
		"Incidents": inc.List(), "IncidentsError": c.refusal(inc), "Tracking": meta, "Next": next, "Paged": cursor != ""}
	ui.renderShop(w, r, c, http.StatusOK, "install", "Install and scopes", p)
}
