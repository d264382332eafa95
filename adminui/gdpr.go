package adminui

import (
	"net/http"
)

// The GDPR requests page: the shop's privacy requests from its commerce
// platform (GET /api/v1/gdpr-requests), newest first, with their kind,
// the customer as the API names it, status and attempts, and when they
// were received, are due and were completed.

func (ui *UI) gdprPages() []shopPage {
	return []shopPage{{"gdpr", http.MethodGet, "gdpr", ui.gdprPage}}
}

// gdprKinds are the request kinds' names for people.
var gdprKinds = map[string]string{
	"customers/data_request": "Data request",
	"customers/redact":       "Redact a customer",
	"shop/redact":            "Shop redact",
}

func (ui *UI) gdprPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	a, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/gdpr-requests?"+listQuery(r.URL.Query().Get("cursor")), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	p := page{Notice: notice(r), Data: map[string]any{"Requests": a.List(), "ListError": a.Problem(), "Next": nextCursor(a), "Kinds": gdprKinds}}
	ui.renderShop(w, r, c, worst(a), "gdpr", "GDPR requests", p)
}
