package adminui

import (
	"math"
	"net/http"
	"net/url"
)

// The usage and AI credits page: the shop's plan, billing period, admin
// API requests (per token) against the plan's rate limit, AI credits and
// the image operations that consumed them, from GET /api/v1/usage called
// as the user (any role may read it). The recent image operations are
// not listed: GET /api/v1/images answers image-API keys only.

func (ui *UI) usagePages() []shopPage {
	return []shopPage{{"usage", http.MethodGet, "usage", ui.usagePage}}
}

func (ui *UI) usagePage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	path := "/api/v1/usage"
	period := r.URL.Query().Get("period")
	if period != "" {
		path += "?" + url.Values{"filter[period]": {period}}.Encode()
	}
	a, err := ui.call(r, c.as(), http.MethodGet, path, nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	status, p := http.StatusOK, page{Notice: notice(r)}
	if !a.OK() {
		status, p.Error = a.Status, a.Problem()
	}
	p.Data = map[string]any{"Usage": whole(a.Attrs()), "Period": period}
	ui.renderShop(w, r, c, status, "usage", "Usage and AI credits", p)
}

// whole gives the counts of a decoded JSON document as integers, so that
// a million reads 1000000, not 1e+06.
func whole(v any) any {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = whole(e)
		}
	case []any:
		for i, e := range x {
			x[i] = whole(e)
		}
	}
	return v
}
