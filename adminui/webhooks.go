package adminui

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
)

// The outbound webhooks pages: the shop's subscriptions (URL, event
// types, status, creation) with the create form (the signing secret shown
// once), and one subscription's page: its settings and their change,
// enable or disable, delete, rotate the secret (shown once, with how long
// the previous one keeps signing), send a test event, and the attempt log
// with retry of one delivery and recover since a time. Each is the API's
// /api/v1/webhook-subscriptions endpoint, called as the user.

func (ui *UI) webhookPages() []shopPage {
	return []shopPage{
		{"webhooks", http.MethodGet, "webhooks", ui.webhooksPage},
		{"webhooks", http.MethodPost, "webhooks", ui.createWebhook},
		{"webhooks/{sub_id}", http.MethodGet, "webhooks", ui.webhookPage},
		{"webhooks/{sub_id}", http.MethodPost, "webhooks", ui.updateWebhook},
		{"webhooks/{sub_id}/enabled", http.MethodPost, "webhooks", ui.enableWebhook},
		{"webhooks/{sub_id}/delete", http.MethodPost, "webhooks", ui.deleteWebhook},
		{"webhooks/{sub_id}/rotate", http.MethodPost, "webhooks", ui.rotateWebhookSecret},
		{"webhooks/{sub_id}/test", http.MethodPost, "webhooks", ui.testWebhook},
		{"webhooks/{sub_id}/recover", http.MethodPost, "webhooks", ui.recoverWebhook},
		{"webhooks/{sub_id}/deliveries/{delivery_id}/retry", http.MethodPost, "webhooks", ui.retryWebhookDelivery},
	}
}

// webhookOverlaps are the rotation's offered overlaps (seconds, label),
// the API's default (24 hours) first.
var webhookOverlaps = []struct {
	Seconds int
	Label   string
}{{86400, "24 hours (the default)"}, {3600, "1 hour"}, {604800, "7 days"}, {0, "none: the previous secret stops at once"}}

// subPath is the API path of the page's subscription.
func subPath(r *http.Request) string {
	return "/api/v1/webhook-subscriptions/" + url.PathEscape(mux.Vars(r)["sub_id"])
}

func (ui *UI) webhooksPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.showWebhooks(w, r, c, http.StatusOK, page{Notice: notice(r)}, nil)
}

// eventTypes is the API's catalogue of event types ("" problem when read).
func (ui *UI) eventTypes(r *http.Request, c *shopCtx) ([]any, string, error) {
	a, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/webhook-event-types", nil, "")
	if err != nil {
		return nil, "", err
	}
	return a.List(), a.Problem(), nil
}

// showWebhooks renders the list with p's notice, error or secret; form
// is the create form's values to keep after a refusal.
func (ui *UI) showWebhooks(w http.ResponseWriter, r *http.Request, c *shopCtx, status int, p page, form url.Values) {
	a, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/webhook-subscriptions?limit=100", nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	types, typesErr, err := ui.eventTypes(r, c)
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if form == nil {
		form = url.Values{}
	}
	states := map[string]string{}
	for _, s := range a.List() {
		m, _ := s.(map[string]any)
		id, _ := m["id"].(string)
		at, _ := m["attributes"].(map[string]any)
		states[id] = webhookStatus(at)
	}
	p.Data = map[string]any{"Subscriptions": a.List(), "Status": states, "ListError": a.Problem(), "EventTypes": types,
		"TypesError": typesErr, "Form": form}
	ui.renderShop(w, r, c, status, "webhooks", "Outbound webhooks", p)
}

// eventTypesOf is the form's event types (never nil: the API then says
// at least one is needed).
func eventTypesOf(f url.Values) []string {
	if t := f["event_types"]; t != nil {
		return t
	}
	return []string{}
}

func (ui *UI) createWebhook(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	f := r.PostForm
	body := map[string]any{"url": strings.TrimSpace(f.Get("url")), "event_types": eventTypesOf(f)}
	if d := strings.TrimSpace(f.Get("description")); d != "" {
		body["description"] = d
	}
	a, err := ui.call(r, c.as(), http.MethodPost, "/api/v1/webhook-subscriptions", body, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showWebhooks(w, r, c, a.Status, page{Error: a.Problem()}, f)
		return
	}
	sec, _ := a.Attrs()["secret"].(string)
	id, _ := a.Data().(map[string]any)["id"].(string)
	ui.showWebhooks(w, r, c, http.StatusCreated, page{Secret: &secret{
		Label: "The signing secret of " + id,
		Value: sec,
		Note: "Deliveries to " + f.Get("url") + " are signed with it (X-Service-Signature: sha256=HMAC-SHA256 of the body). " +
			"Copy it now: it is shown only this once, and cannot be read again (rotate it to get a new one)."}}, nil)
}

func (ui *UI) webhookPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.showWebhook(w, r, c, http.StatusOK, page{Notice: notice(r)}, nil)
}

// showWebhook renders one subscription's page with its attempt log;
// form is the settings form's values to keep after a refusal. A
// subscription the shop does not have is the API's 404.
func (ui *UI) showWebhook(w http.ResponseWriter, r *http.Request, c *shopCtx, status int, p page, form url.Values) {
	sub, err := ui.call(r, c.as(), http.MethodGet, subPath(r), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !sub.OK() {
		if sub.Status == http.StatusNotFound {
			ui.renderShop(w, r, c, http.StatusNotFound, "error", "Not found", page{Error: "This shop has no such webhook subscription (it may have been deleted)."})
			return
		}
		ui.renderShop(w, r, c, sub.Status, "error", "Outbound webhooks", page{Error: sub.Problem()})
		return
	}
	q := url.Values{"limit": {"50"}}
	if st := r.URL.Query().Get("state"); st != "" {
		q.Set("filter[state]", st)
	}
	dl, err := ui.call(r, c.as(), http.MethodGet, subPath(r)+"/deliveries?"+q.Encode(), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	types, typesErr, err := ui.eventTypes(r, c)
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if form == nil {
		at := sub.Attrs()
		u, _ := at["url"].(string)
		d, _ := at["description"].(string)
		form = url.Values{"url": {u}, "description": {d}}
		if l, ok := at["event_types"].([]any); ok {
			for _, t := range l {
				form.Add("event_types", fmt.Sprint(t))
			}
		}
	}
	p.Data = map[string]any{"Subscription": sub.Data(), "Status": webhookStatus(sub.Attrs()), "Deliveries": dl.List(), "DeliveriesError": dl.Problem(),
		"State": r.URL.Query().Get("state"), "EventTypes": types, "TypesError": typesErr, "Form": form,
		"Overlaps": webhookOverlaps, "RecoverSince": time.Now().UTC().Add(-24 * time.Hour).Format("2006-01-02T15:04")}
	ui.renderShop(w, r, c, status, "webhook", "Webhook subscription", p)
}

// webhookBack is the subscription's page after a form that acted.
func webhookBack(w http.ResponseWriter, r *http.Request, c *shopCtx, notice string) {
	back(w, r, c, "webhooks/"+url.PathEscape(mux.Vars(r)["sub_id"]), notice)
}

func (ui *UI) updateWebhook(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	f := r.PostForm
	a, err := ui.call(r, c.as(), http.MethodPatch, subPath(r), map[string]any{"url": strings.TrimSpace(f.Get("url")),
		"event_types": eventTypesOf(f), "description": strings.TrimSpace(f.Get("description"))}, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showWebhook(w, r, c, a.Status, page{Error: a.Problem()}, f)
		return
	}
	webhookBack(w, r, c, "The subscription's settings are saved.")
}

func (ui *UI) enableWebhook(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	on := r.PostForm.Get("enabled") == "true"
	a, err := ui.call(r, c.as(), http.MethodPatch, subPath(r), map[string]any{"enabled": on}, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showWebhook(w, r, c, a.Status, page{Error: a.Problem()}, nil)
		return
	}
	if on {
		webhookBack(w, r, c, "The subscription is enabled: deliveries resume. Events held meanwhile wait for a recover.")
		return
	}
	webhookBack(w, r, c, "The subscription is disabled: nothing is delivered; its events are held for a recover.")
}

func (ui *UI) deleteWebhook(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	a, err := ui.call(r, c.as(), http.MethodDelete, subPath(r), nil, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showWebhook(w, r, c, a.Status, page{Error: a.Problem()}, nil)
		return
	}
	back(w, r, c, "webhooks", "Subscription "+mux.Vars(r)["sub_id"]+" is deleted: nothing more is delivered to it.")
}

func (ui *UI) rotateWebhookSecret(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	overlap, err := strconv.Atoi(r.PostForm.Get("overlap_seconds"))
	if err != nil {
		overlap = webhookOverlaps[0].Seconds
	}
	a, err := ui.call(r, c.as(), http.MethodPost, subPath(r)+"/rotate-secret", map[string]any{"overlap_seconds": overlap}, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showWebhook(w, r, c, a.Status, page{Error: a.Problem()}, nil)
		return
	}
	at := a.Attrs()
	sec, _ := at["secret"].(string)
	note := "The previous secret stopped signing at once."
	if until, _ := at["previous_secret_valid_until"].(string); until != "" {
		note = "The previous secret keeps signing too until " + funcs["when"].(func(any) string)(until) +
			": meanwhile X-Service-Signature carries both signatures (sha256=<new>,sha256=<previous>), so your receiver can switch without losing a delivery."
	}
	ui.showWebhook(w, r, c, http.StatusOK, page{Secret: &secret{Label: "The new signing secret of " + mux.Vars(r)["sub_id"], Value: sec,
		Note: note + " Copy the new secret now: it is shown only this once."}}, nil)
}

func (ui *UI) testWebhook(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	a, err := ui.call(r, c.as(), http.MethodPost, subPath(r)+"/test", nil, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showWebhook(w, r, c, a.Status, page{Error: a.Problem()}, nil)
		return
	}
	id, _ := a.Data().(map[string]any)["id"].(string)
	at := a.Attrs()
	msg := "Test event (ping) sent as delivery " + id + ": "
	switch {
	case a.Status == http.StatusAccepted:
		msg += "not attempted yet; see the attempt log."
	case at["state"] == "succeeded":
		msg += fmt.Sprintf("succeeded, the endpoint answered HTTP %v.", at["last_response_status"])
	default:
		msg += fmt.Sprintf("failed (%v", at["last_failure_reason"])
		if s := at["last_response_status"]; s != nil {
			msg += fmt.Sprintf(", HTTP %v", s)
		}
		msg += "); a ping is not retried by itself: retry it from the attempt log."
	}
	webhookBack(w, r, c, msg)
}

// parseSince reads the recover form's time: the browser's
// datetime-local (taken as UTC) or RFC 3339.
func parseSince(v string) (time.Time, bool) {
	v = strings.TrimSpace(v)
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func (ui *UI) recoverWebhook(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	since, ok := parseSince(r.PostForm.Get("since"))
	if !ok {
		ui.showWebhook(w, r, c, http.StatusUnprocessableEntity, page{Error: "since: give a date and time (UTC), e.g. 2026-11-20T00:00."}, nil)
		return
	}
	a, err := ui.call(r, c.as(), http.MethodPost, subPath(r)+"/recover", map[string]any{"since": since.Format(time.RFC3339)}, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showWebhook(w, r, c, a.Status, page{Error: a.Problem()}, nil)
		return
	}
	webhookBack(w, r, c, fmt.Sprintf("Recover since %s: %v deliveries queued.", since.Format("2006-01-02 15:04 UTC"), a.Attrs()["queued"]))
}

func (ui *UI) retryWebhookDelivery(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	d := mux.Vars(r)["delivery_id"]
	a, err := ui.call(r, c.as(), http.MethodPost, subPath(r)+"/deliveries/"+url.PathEscape(d)+"/retry", nil, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showWebhook(w, r, c, a.Status, page{Error: a.Problem()}, nil)
		return
	}
	webhookBack(w, r, c, fmt.Sprintf("Delivery %s is sent again (%v).", d, a.Attrs()["state"]))
}

// webhookStatus says a subscription's status as the API gives it:
// disabled (why, since when), failing (since when, and when it is
// disabled unless a delivery succeeds), or active.
func webhookStatus(at map[string]any) string {
	when := funcs["when"].(func(any) string)
	if on, _ := at["enabled"].(bool); !on {
		s := "disabled"
		switch at["disabled_reason"] {
		case "merchant":
			s += " (by a user)"
		case "gone":
			s += " (the endpoint answered 410 Gone)"
		case "failing":
			s += " (deliveries kept failing)"
		}
		if d := at["disabled_at"]; d != nil {
			s += " since " + when(d)
		}
		return s
	}
	if f := at["failing_since"]; f != nil {
		s := "failing since " + when(f)
		if d := at["disable_at"]; d != nil {
			s += "; disabled " + when(d) + " unless a delivery succeeds first"
		}
		return s
	}
	return "active"
}
