package adminui

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/domain"
)

// The reviews page: the moderation queue (pending first; a GET form
// filters by status, a cursor pages on), each review with its publish,
// reject (with the reason the API requires) and reply forms, and the
// shop's auto-publish settings. Each is the API's /api/v1/reviews
// endpoint, called as the user.

func (ui *UI) reviewPages() []shopPage {
	return []shopPage{
		{"reviews", http.MethodGet, "reviews", ui.reviewsPage},
		{"reviews/settings", http.MethodPost, "reviews", ui.setReviewSettings},
		{"reviews/{review_id}/publish", http.MethodPost, "reviews", ui.publishReview},
		{"reviews/{review_id}/reject", http.MethodPost, "reviews", ui.rejectReview},
		{"reviews/{review_id}/reply", http.MethodPost, "reviews", ui.replyReview},
	}
}

// reviewsPerPage is the queue's page size.
const reviewsPerPage = 25

// reviewFilter is the queue's status filter from the page's query:
// pending unless another status (or "all") is chosen.
func reviewFilter(q url.Values) string {
	s := q.Get("status")
	if s == "all" || slices.Contains(domain.ReviewStatuses(), s) {
		return s
	}
	return domain.ReviewStatusPending
}

func (ui *UI) reviewsPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.showReviews(w, r, c, http.StatusOK, page{Notice: notice(r)}, nil)
}

// keptReview is a refused moderation form's review and values, kept on
// the page (its form open) so nothing typed is lost.
type keptReview struct {
	ID, Action string
	Form       url.Values
}

// showReviews renders the reviews page with p's notice or error; settings
// is the settings form's values to keep after a refusal (nil: the API's).
// The status filter and cursor are the request's query (a form that
// failed answers with the queue it was posted from).
func (ui *UI) showReviews(w http.ResponseWriter, r *http.Request, c *shopCtx, status int, p page, settings url.Values) {
	q := r.URL.Query()
	filter := reviewFilter(q)
	api := url.Values{"limit": {strconv.Itoa(reviewsPerPage)}}
	if filter != "all" {
		api.Set("filter[status]", filter)
	}
	if cur := q.Get("cursor"); cur != "" {
		api.Set("cursor", cur)
	}
	list, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/reviews?"+api.Encode(), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	next := ""
	if cur := nextCursor(list); cur != "" {
		next = c.Base() + "/reviews?" + url.Values{"status": {filter}, "cursor": {cur}}.Encode()
	}
	set, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/reviews/settings", nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if settings == nil {
		settings = url.Values{}
		if rule, ok := set.Attrs()["auto_publish"].(map[string]any); ok {
			if rule["enabled"] == true {
				settings.Set("enabled", "yes")
			}
			if rule["require_verified"] == true {
				settings.Set("require_verified", "yes")
			}
			settings.Set("min_rating", fmt.Sprint(rule["min_rating"]))
		}
	}
	kept := p.Data["Kept"]
	p.Data = map[string]any{"Kept": kept, "Reviews": list.List(), "ListError": list.Problem(), "Status": filter,
		"Statuses": append(domain.ReviewStatuses(), "all"), "Next": next, "Paged": q.Get("cursor") != "",
		"Settings": settings, "SettingsError": set.Problem(), "SetAt": set.Attrs()["set_at"]}
	p.Data["MaxReason"], p.Data["MaxReply"] = domain.MaxReviewReason, domain.MaxReviewReply
	if p.Data["Kept"] == nil {
		p.Data["Kept"] = keptReview{}
	}
	ui.renderShop(w, r, c, status, "reviews", "Reviews", p)
}

// setReviewSettings sends the whole auto-publish rule (a checkbox left
// unticked is false). A minimum rating that is not a whole number is sent
// as written: the API's validation answers it.
func (ui *UI) setReviewSettings(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	f := r.PostForm
	var min any = f.Get("min_rating")
	if n, err := strconv.Atoi(strings.TrimSpace(f.Get("min_rating"))); err == nil {
		min = n
	}
	a, err := ui.call(r, c.as(), http.MethodPatch, "/api/v1/reviews/settings", map[string]any{"auto_publish": map[string]any{
		"enabled": f.Get("enabled") == "yes", "require_verified": f.Get("require_verified") == "yes", "min_rating": min}}, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showReviews(w, r, c, a.Status, page{Error: "The settings were not saved: " + a.Problem()}, f)
		return
	}
	back(w, r, c, "reviews", "The review settings are saved.")
}

func (ui *UI) publishReview(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.moderateReview(w, r, c, "publish", nil, "is published on the storefront.")
}

func (ui *UI) rejectReview(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.moderateReview(w, r, c, "reject", map[string]any{"reason": r.PostForm.Get("reason")}, "is rejected.")
}

func (ui *UI) replyReview(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.moderateReview(w, r, c, "reply", map[string]any{"body": r.PostForm.Get("body")}, "has your reply.")
}

// moderateReview posts the review's action with body and goes back to the
// queue; a refusal is shown on the queue with the API's status.
func (ui *UI) moderateReview(w http.ResponseWriter, r *http.Request, c *shopCtx, action string, body any, done string) {
	id := mux.Vars(r)["review_id"]
	a, err := ui.call(r, c.as(), http.MethodPost, "/api/v1/reviews/"+url.PathEscape(id)+"/"+action, body, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showReviews(w, r, c, a.Status, page{Error: "Review " + id + ": " + a.Problem(),
			Data: map[string]any{"Kept": keptReview{ID: id, Action: action, Form: r.PostForm}}}, nil)
		return
	}
	back(w, r, c, "reviews", "Review "+id+" "+done)
}
