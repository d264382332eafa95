package adminui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/tenancy"
)

// The admin interface acts through the service's own API, in-process:
// every page reads what the API's GET endpoints answer and every form is
// the API's command, with the signed-in user as the caller (auth.
// WithSession), so validation, errors, idempotency, read-your-writes and
// the audit history (actor "user:<id>") are the API's, not a second
// implementation.

// Roles of merchant users.
const (
	RoleOwner    = "owner"
	RoleAdmin    = "admin"
	RoleReadOnly = "read_only"
)

// principal is what the user acts as on shop: owners and admins hold
// every scope ("*"), a read-only user every read scope. master is the
// account-level caller of the token endpoints (an owner's or admin's
// only).
func principal(u *tenancy.User, s *tenancy.Shop, master bool) auth.Principal {
	p := auth.Principal{TokenID: "user:" + u.ID, ShopID: s.ID, AccountID: u.AccountID, Plan: s.Plan}
	if u.Role == RoleReadOnly {
		for _, sc := range domain.AdminScopes() {
			if strings.HasSuffix(string(sc), ":read") {
				p.Scopes = append(p.Scopes, sc)
			}
		}
		return p
	}
	p.Scopes = []domain.Scope{domain.ScopeAll}
	if master {
		p.ShopID, p.Master, p.Scopes = "", true, nil
	}
	return p
}

// answer is what an in-process API call answered.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
	// Doc is the decoded JSON document (nil for an empty body).
	Doc map[string]any
}

// OK reports a 2xx answer.
func (a *answer) OK() bool { return a.Status >= 200 && a.Status < 300 }

// Data is the document's data member.
func (a *answer) Data() any { return a.Doc["data"] }

// List is the document's data member as a list.
func (a *answer) List() []any {
	l, _ := a.Doc["data"].([]any)
	return l
}

// nextCursor is a list answer's next page's cursor ("" on the last page).
func nextCursor(a *answer) string {
	p, _ := a.Doc["pagination"].(map[string]any)
	c, _ := p["next_cursor"].(string)
	return c
}

// Attrs is the single resource's attributes.
func (a *answer) Attrs() map[string]any {
	d, _ := a.Doc["data"].(map[string]any)
	at, _ := d["attributes"].(map[string]any)
	return at
}

// Problem is the error's message for the page (empty for a success),
// with the field a validation error names.
func (a *answer) Problem() string {
	if a.OK() {
		return ""
	}
	e, _ := a.Doc["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if msg == "" {
		msg = http.StatusText(a.Status)
	}
	if d, ok := e["details"].(map[string]any); ok {
		if f, ok := d["field"].(string); ok && f != "" && !strings.Contains(msg, f) {
			msg = f + ": " + msg
		}
	}
	return msg
}

// recorder is the in-process call's response writer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// maxAnswer bounds what an in-process answer may hold for a page.
const maxAnswer = 8 << 20

// call sends one request to the API as p, from the browser's request r
// (its context, client address and request id), with body (when not
// nil) sent as the JSON document {"data":{"attributes": body}}. idem, when not empty, is sent as Idempotency-Key (the
// form's one-time value: a form posted twice acts once).
func (ui *UI) call(r *http.Request, p auth.Principal, method, path string, body any, idem string) (*answer, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(map[string]any{"data": map[string]any{"attributes": body}})
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(auth.WithSession(r.Context(), p), method, path, rd)
	if err != nil {
		return nil, err
	}
	if req.Body == nil {
		// A server's request always has a body (an empty one here): a
		// handler reading an optional body must not meet nil.
		req.Body = http.NoBody
	}
	req.RemoteAddr = r.RemoteAddr
	if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	if at := waitAt(r); at != "" {
		req.Header.Set(httpapi.HeaderWaitForPosition, at)
	}
	rec := &recorder{header: http.Header{}}
	ui.cfg.API.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	a := &answer{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}
	if rec.body.Len() > maxAnswer {
		return nil, fmt.Errorf("%s %s: answer of %d bytes", method, path, rec.body.Len())
	}
	if rec.body.Len() > 0 && strings.HasPrefix(rec.header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(rec.body.Bytes(), &a.Doc); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	if a.Status >= 500 {
		return a, fmt.Errorf("%s %s: %d %s", method, path, a.Status, a.Problem())
	}
	return a, nil
}

// waitAt is the position a page shown after a form that acted reads at
// least (its `at` query parameter, set by backAt from the API's
// X-Event-Position): the page shows the user's own write (read-your-
// writes, bounded by the API's wait). On the server that took the form the
// session principal's last write already gives that (auth's per-server
// record); the parameter carries it to another server behind the load
// balancer (sessions are shared in Redis, no sticky sessions). Only on
// GET; "" when absent or not a position.
func waitAt(r *http.Request) string {
	if r.Method != http.MethodGet {
		return ""
	}
	at := r.URL.Query().Get("at")
	if at == "" || len(at) > 20 || strings.Trim(at, "0123456789") != "" {
		return ""
	}
	return at
}
