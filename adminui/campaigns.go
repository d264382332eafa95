package adminui

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/domain"
)

// The campaigns and journeys pages: the shop's campaigns and journeys
// with their status and metrics (GET /api/v1/campaigns and
// /api/v1/journeys), one campaign's or journey's page with its full
// metrics (a journey's with its recent enrollments), and the launch,
// pause and resume forms, each the API's own command called as the user.

// listPage is how many rows a list page of these pages asks the API for.
const listPage = 25

func (ui *UI) campaignPages() []shopPage {
	return []shopPage{
		{"campaigns", http.MethodGet, "campaigns", ui.campaignsPage},
		{"campaigns/{campaign_id}", http.MethodGet, "campaigns", ui.campaignPage},
		{"campaigns/{campaign_id}/launch", http.MethodPost, "campaigns", ui.flowAction("campaign", "launch")},
		{"campaigns/{campaign_id}/pause", http.MethodPost, "campaigns", ui.flowAction("campaign", "pause")},
		{"campaigns/{campaign_id}/resume", http.MethodPost, "campaigns", ui.flowAction("campaign", "resume")},
		{"journeys/{journey_id}", http.MethodGet, "campaigns", ui.journeyPage},
		{"journeys/{journey_id}/pause", http.MethodPost, "campaigns", ui.flowAction("journey", "pause")},
		{"journeys/{journey_id}/resume", http.MethodPost, "campaigns", ui.flowAction("journey", "resume")},
	}
}

// listQuery is an API list's query: limit, and the cursor when not empty.
func listQuery(cursor string) string {
	q := url.Values{"limit": {strconv.Itoa(listPage)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q.Encode()
}

// worst is the page's status from its API reads: the first refusal's
// (a bad cursor is the API's 400), else 200.
func worst(as ...*answer) int {
	for _, a := range as {
		if !a.OK() {
			return a.Status
		}
	}
	return http.StatusOK
}

func (ui *UI) campaignsPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	q := r.URL.Query()
	cams, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/campaigns?"+listQuery(q.Get("campaigns_cursor")), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	jrns, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/journeys?"+listQuery(q.Get("journeys_cursor")), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	p := page{Notice: notice(r), Data: map[string]any{
		"Campaigns": cams.List(), "CampaignsError": cams.Problem(), "CampaignsNext": nextCursor(cams),
		"Journeys": jrns.List(), "JourneysError": jrns.Problem(), "JourneysNext": nextCursor(jrns),
	}}
	ui.renderShop(w, r, c, worst(cams, jrns), "campaigns", "Campaigns and journeys", p)
}

func (ui *UI) campaignPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.showCampaign(w, r, c, http.StatusOK, page{Notice: notice(r)})
}

// showCampaign renders one campaign's page with p's notice or error (a
// refused action's, with its status).
func (ui *UI) showCampaign(w http.ResponseWriter, r *http.Request, c *shopCtx, status int, p page) {
	id := mux.Vars(r)["campaign_id"]
	a, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/campaigns/"+url.PathEscape(id), nil, "")
	if err == nil && a.Status == http.StatusNotFound {
		err = domain.NotFound("campaign")
	}
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		status, p.Error = a.Status, a.Problem()
	}
	p.Data = map[string]any{"Campaign": a.Data()}
	title, _ := a.Attrs()["name"].(string)
	ui.renderShop(w, r, c, status, "campaign", "Campaign "+title, p)
}

func (ui *UI) journeyPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.showJourney(w, r, c, http.StatusOK, page{Notice: notice(r)})
}

// showJourney renders one journey's page with its recent enrollments.
func (ui *UI) showJourney(w http.ResponseWriter, r *http.Request, c *shopCtx, status int, p page) {
	id := mux.Vars(r)["journey_id"]
	a, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/journeys/"+url.PathEscape(id), nil, "")
	if err == nil && a.Status == http.StatusNotFound {
		err = domain.NotFound("journey")
	}
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		status, p.Error = a.Status, a.Problem()
	}
	en, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/journeys/"+url.PathEscape(id)+"/enrollments?"+
		listQuery(r.URL.Query().Get("cursor")), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if status == http.StatusOK {
		status = worst(en)
	}
	p.Data = map[string]any{"Journey": a.Data(), "Enrollments": en.List(), "EnrollmentsError": en.Problem(), "EnrollmentsNext": nextCursor(en)}
	title, _ := a.Attrs()["name"].(string)
	ui.renderShop(w, r, c, status, "journey", "Journey "+title, p)
}

// flowAction is the form that launches, pauses or resumes a campaign or
// a journey (kind): the API's POST /api/v1/{kind}s/{id}/{action} as the
// user, then back (303) to the list (return=list) or the item's page with
// a notice; a refusal (a conflict: the status does not allow it) is shown
// on the item's page with the API's status.
func (ui *UI) flowAction(kind, action string) func(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	done := map[string]string{"launch": "launched", "pause": "paused", "resume": "resumed"}[action]
	return func(w http.ResponseWriter, r *http.Request, c *shopCtx) {
		id := mux.Vars(r)[kind+"_id"]
		a, err := ui.call(r, c.as(), http.MethodPost, "/api/v1/"+kind+"s/"+url.PathEscape(id)+"/"+action, nil, formKey(r))
		if err == nil && a.Status == http.StatusNotFound {
			err = domain.NotFound(kind)
		}
		if err != nil {
			ui.fail(w, r, err)
			return
		}
		if !a.OK() {
			p := page{Error: "The " + kind + " could not be " + done + ": " + a.Problem()}
			if kind == "campaign" {
				ui.showCampaign(w, r, c, a.Status, p)
			} else {
				ui.showJourney(w, r, c, a.Status, p)
			}
			return
		}
		name, _ := a.Attrs()["name"].(string)
		st, _ := a.Attrs()["status"].(string)
		to := kind + "s/" + url.PathEscape(id)
		if r.PostForm.Get("return") == "list" {
			to = "campaigns"
		}
		back(w, r, c, to, "The "+kind+" "+name+" is "+done+" (status: "+st+").")
	}
}
