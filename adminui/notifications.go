package adminui

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/domain"
)

// The notifications page: the shop's in-app notifications (GET
// /api/v1/notifications) with their filters (severity, kind, unread) and
// cursor pagination, one notification's page, "mark as read" per
// notification (POST /api/v1/notifications/{id}/read) or all of them
// (POST /api/v1/notifications/read), and the notification settings (GET and PATCH
// /api/v1/shop: addresses, chat number, channels per severity, quiet
// hours).

func (ui *UI) notificationPages() []shopPage {
	return []shopPage{
		{"notifications", http.MethodGet, "notifications", ui.notificationsPage},
		{"notifications/settings", http.MethodPost, "notifications", ui.saveNotificationSettings},
		{"notifications/{notification_id}", http.MethodGet, "notifications", ui.notificationPage},
		{"notifications/{notification_id}/read", http.MethodPost, "notifications", ui.markNotificationRead},
		{"notifications/read-all", http.MethodPost, "notifications", ui.markAllNotificationsRead},
	}
}

// markAllNotificationsRead is POST /api/v1/notifications/read as the user.
func (ui *UI) markAllNotificationsRead(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	a, err := ui.call(r, c.as(), http.MethodPost, "/api/v1/notifications/read", nil, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showNotifications(w, r, c, a.Status, page{Error: a.Problem()}, nil)
		return
	}
	n, _ := a.Attrs()["marked"].(float64)
	backAt(w, r, c, "notifications", fmt.Sprintf("Marked %d notifications as read.", int(n)), a)
}

// notificationFilters are the list's filters: the page's query
// parameters of the same names, the API's filter[...].
var notificationFilters = []string{"severity", "kind", "unread"}

func (ui *UI) notificationsPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.showNotifications(w, r, c, http.StatusOK, page{Notice: notice(r)}, nil)
}

// showNotifications renders the list (filtered as the page's query says)
// and the settings form; form is the settings form's values to keep
// after a refusal (nil: the shop's settings).
func (ui *UI) showNotifications(w http.ResponseWriter, r *http.Request, c *shopCtx, status int, p page, form url.Values) {
	q := r.URL.Query()
	api := url.Values{"limit": {"25"}}
	filters := url.Values{}
	for _, f := range notificationFilters {
		if v := q.Get(f); v != "" {
			api.Set("filter["+f+"]", v)
			filters.Set(f, v)
		}
	}
	if cur := q.Get("cursor"); cur != "" {
		api.Set("cursor", cur)
	}
	list, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/notifications?"+api.Encode(), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	next := ""
	if cur := nextCursor(list); cur != "" {
		nq := url.Values{}
		for k, v := range filters {
			nq[k] = v
		}
		nq.Set("cursor", cur)
		next = c.Base() + "/notifications?" + nq.Encode()
	}
	if !list.OK() && status == http.StatusOK {
		status = list.Status
	}
	data := map[string]any{"Notifications": list.List(), "ListError": list.Problem(), "Filters": filters, "Next": next,
		"Severities": domain.Severities(), "Kinds": domain.AnomalyKinds(), "Channels": domain.NotifyChannels()}
	if c.CanWrite() {
		shop, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/shop", nil, "")
		if err != nil {
			ui.fail(w, r, err)
			return
		}
		if form == nil {
			form = settingsForm(shop.Attrs())
		}
		data["SettingsError"], data["Form"] = shop.Problem(), form
		data["ContactEmail"] = shop.Attrs()["contact_email"]
	}
	p.Data = data
	ui.renderShop(w, r, c, status, "notifications", "Notifications", p)
}

// settingsForm is the settings form's values from the shop's settings.
func settingsForm(shop map[string]any) url.Values {
	n, _ := shop["notifications"].(map[string]any)
	f := url.Values{}
	var emails []string
	if l, ok := n["emails"].([]any); ok {
		for _, e := range l {
			emails = append(emails, fmt.Sprint(e))
		}
	}
	f.Set("emails", strings.Join(emails, "\n"))
	if cn, ok := n["chat_number"].(string); ok {
		f.Set("chat_number", "+"+strings.TrimPrefix(cn, "+"))
	}
	ch, _ := n["channels"].(map[string]any)
	for _, sev := range domain.Severities() {
		l, _ := ch[sev].([]any)
		f["channels_"+sev] = []string{}
		for _, x := range l {
			f.Add("channels_"+sev, fmt.Sprint(x))
		}
	}
	if qh, ok := n["quiet_hours"].(map[string]any); ok {
		f.Set("quiet_start", fmt.Sprint(qh["start"]))
		f.Set("quiet_end", fmt.Sprint(qh["end"]))
		f.Set("quiet_time_zone", fmt.Sprint(qh["time_zone"]))
	}
	return f
}

// settingsPatch is the PATCH /api/v1/shop body of the settings form: the
// addresses one a line (or comma-separated), the chat number ("" none),
// the channels of every severity, the quiet hours (all three empty:
// none).
func settingsPatch(f url.Values) map[string]any {
	emails := []string{}
	for _, e := range strings.FieldsFunc(f.Get("emails"), func(r rune) bool { return r == '\n' || r == '\r' || r == ',' }) {
		if e = strings.TrimSpace(e); e != "" {
			emails = append(emails, e)
		}
	}
	channels := map[string][]string{}
	for _, sev := range domain.Severities() {
		channels[sev] = append([]string{}, f["channels_"+sev]...)
	}
	var quiet any
	start, end, tz := strings.TrimSpace(f.Get("quiet_start")), strings.TrimSpace(f.Get("quiet_end")), strings.TrimSpace(f.Get("quiet_time_zone"))
	if start != "" || end != "" || tz != "" {
		quiet = map[string]string{"start": start, "end": end, "time_zone": tz}
	}
	return map[string]any{"notifications": map[string]any{"emails": emails, "chat_number": strings.TrimSpace(f.Get("chat_number")),
		"channels": channels, "quiet_hours": quiet}}
}

func (ui *UI) saveNotificationSettings(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	a, err := ui.call(r, c.as(), http.MethodPatch, "/api/v1/shop", settingsPatch(r.PostForm), formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if !a.OK() {
		ui.showNotifications(w, r, c, a.Status, page{Error: "The settings were not saved: " + a.Problem()}, r.PostForm)
		return
	}
	backAt(w, r, c, "notifications", "The notification settings are saved.", a)
}

func (ui *UI) notificationPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	id := mux.Vars(r)["notification_id"]
	a, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/notifications/"+url.PathEscape(id), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if a.Status == http.StatusNotFound {
		ui.fail(w, r, domain.NotFound("notification"))
		return
	}
	title, _ := a.Attrs()["title"].(string)
	if title == "" {
		title = "Notification"
	}
	status := http.StatusOK
	if !a.OK() {
		status = a.Status
	}
	ui.renderShop(w, r, c, status, "notification", title, page{Notice: notice(r), Error: a.Problem(),
		Data: map[string]any{"Notification": a.Data()}})
}

// markNotificationRead marks one read and goes back where the form says
// (the list, with its filters, or the notification's page).
func (ui *UI) markNotificationRead(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	id := mux.Vars(r)["notification_id"]
	a, err := ui.call(r, c.as(), http.MethodPost, "/api/v1/notifications/"+url.PathEscape(id)+"/read", nil, formKey(r))
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	if a.Status == http.StatusNotFound {
		ui.fail(w, r, domain.NotFound("notification"))
		return
	}
	if !a.OK() {
		ui.showNotifications(w, r, c, a.Status, page{Error: a.Problem()}, nil)
		return
	}
	to := "notifications"
	if r.PostForm.Get("back") == "notification" {
		to += "/" + url.PathEscape(id)
	}
	backAt(w, r, c, to, "Marked as read.", a)
}
