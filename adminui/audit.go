package adminui

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The audit history page: the shop's events (GET /api/v1/audit-events)
// with a filter form (stream, actor, type, and a time range given as
// datetime inputs, read as UTC and sent as RFC 3339), each event's data,
// pagination, and the chain verification (GET
// /api/v1/audit-events/verify), a read any user of the shop may run.

func (ui *UI) auditPages() []shopPage {
	return []shopPage{
		{"audit", http.MethodGet, "audit", ui.auditPage},
		{"audit/verify", http.MethodGet, "audit", ui.auditVerify},
	}
}

// auditFilters are the filter form's fields and the API's filters they
// set.
var auditFilters = []struct{ field, filter string }{
	{"stream", "filter[stream]"}, {"actor", "filter[actor]"}, {"type", "filter[type]"},
	{"from", "filter[recorded_at][gte]"}, {"to", "filter[recorded_at][lt]"},
}

// auditLimit is how many events a page shows.
const auditLimit = "50"

// instant converts a datetime input's value (2026-11-28T05:11, seconds
// optional, read as UTC) to RFC 3339; any other value is sent as typed
// (an RFC 3339 instant or a date works; the API refuses the rest).
func instant(v string) string {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC().Format(time.RFC3339)
		}
	}
	return v
}

// auditRow is an event of the page.
type auditRow struct {
	Position, Recorded, Type, Stream, Actor, ActorEmail, Source, RequestID, Data string
	Redacted                                                                     []string
}

func (ui *UI) auditPage(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	ui.showAudit(w, r, c, nil)
}

func (ui *UI) auditVerify(w http.ResponseWriter, r *http.Request, c *shopCtx) {
	a, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/audit-events/verify", nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	ui.showAudit(w, r, c, a)
}

// showAudit renders the audit page for the request's filters, with the
// verification's answer when verify is not nil.
func (ui *UI) showAudit(w http.ResponseWriter, r *http.Request, c *shopCtx, verify *answer) {
	in := r.URL.Query()
	q := url.Values{"limit": {auditLimit}, "sort": {"-position"}}
	if in.Get("order") == "oldest" {
		q.Set("sort", "position")
	}
	form := map[string]string{"order": in.Get("order")}
	for _, f := range auditFilters {
		v := strings.TrimSpace(in.Get(f.field))
		form[f.field] = v
		if v == "" {
			continue
		}
		if f.field == "from" || f.field == "to" {
			v = instant(v)
		}
		q.Set(f.filter, v)
	}
	if cur := in.Get("cursor"); cur != "" {
		q.Set("cursor", cur)
	}
	a, err := ui.call(r, c.as(), http.MethodGet, "/api/v1/audit-events?"+q.Encode(), nil, "")
	if err != nil {
		ui.fail(w, r, err)
		return
	}
	rows := ui.auditRows(r, c, a.List())
	next := ""
	if cur := nextCursor(a); cur != "" {
		nq := url.Values{}
		for k, v := range form {
			if v != "" {
				nq.Set(k, v)
			}
		}
		nq.Set("cursor", cur)
		next = c.Base() + "/audit?" + nq.Encode()
	}
	p := page{Notice: notice(r), Data: map[string]any{"Events": rows, "ListError": a.Problem(), "Next": next, "Form": form}}
	status := worst(a)
	if verify != nil {
		p.Data["Verify"] = verify.Attrs()
		p.Data["VerifyError"] = verify.Problem()
		if status == http.StatusOK {
			status = worst(verify)
		}
	}
	ui.renderShop(w, r, c, status, "audit", "Audit history", p)
}

// auditRows are the API's events for the page, with the e-mail of the
// account's users named as actors (user:<id>).
func (ui *UI) auditRows(r *http.Request, c *shopCtx, events []any) []auditRow {
	emails := map[string]string{}
	rows := make([]auditRow, 0, len(events))
	for _, e := range events {
		m, _ := e.(map[string]any)
		at, _ := m["attributes"].(map[string]any)
		s := func(k string) string { v, _ := at[k].(string); return v }
		row := auditRow{Recorded: s("recorded_at"), Type: s("event_type"), Stream: s("stream"), Actor: s("actor"),
			Source: s("source"), RequestID: s("request_id")}
		if n, ok := at["position"].(float64); ok {
			row.Position = strconv.FormatFloat(n, 'f', -1, 64)
		}
		if d, ok := at["data"]; ok && d != nil {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if enc.Encode(d) == nil {
				row.Data = strings.TrimSpace(b.String())
			}
		}
		if l, ok := at["redacted"].([]any); ok {
			for _, x := range l {
				if f, ok := x.(string); ok {
					row.Redacted = append(row.Redacted, f)
				}
			}
		}
		if id, ok := strings.CutPrefix(row.Actor, "user:"); ok && id != "" {
			email, seen := emails[id]
			if !seen {
				if u, err := ui.cfg.Tenancy.UserByID(r.Context(), id); err == nil && u.AccountID == c.User.AccountID {
					email = u.Email
				}
				emails[id] = email
			}
			row.ActorEmail = email
		}
		rows = append(rows, row)
	}
	return rows
}
