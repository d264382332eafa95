package consent

import (
	"errors"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// UnsubscribePath is the public unsubscribe route.
const UnsubscribePath = "/api/public/unsubscribe"

// maxFormBody bounds the POST body (a one-click body or the form's).
const maxFormBody = 4 << 10

// Unsubscribe serves the unsubscribe links.
type Unsubscribe struct {
	links Links
	cmds  *commands.Handler
	now   func() time.Time
}

// NewUnsubscribe returns the unsubscribe handlers: links reads the tokens,
// cmds records the decisions.
func NewUnsubscribe(links Links, cmds *commands.Handler, now func() time.Time) *Unsubscribe {
	return &Unsubscribe{links: links, cmds: cmds, now: now}
}

// Routes registers GET and POST /api/public/unsubscribe (no
// authentication: the signed token is the credential).
func (u *Unsubscribe) Routes(r *mux.Router) {
	r.Handle(UnsubscribePath, httpapi.Beta(http.HandlerFunc(u.handleUnsubscribePage))).Methods(http.MethodGet)
	r.Handle(UnsubscribePath, httpapi.Beta(http.HandlerFunc(u.handleUnsubscribe))).Methods(http.MethodPost)
}

var pages = template.Must(template.New("confirm").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Unsubscribe</title></head><body>
<main><h1>Unsubscribe</h1>
<p>Stop receiving marketing messages by {{.Channel}}?</p>
<form method="post" action="{{.Action}}"><button type="submit">Unsubscribe</button></form>
</main></body></html>
`))

var donePage = template.Must(template.New("done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Unsubscribed</title></head><body>
<main><h1>You are unsubscribed</h1><p>You will receive no more marketing messages by {{.Channel}}.</p></main>
</body></html>
`))

// channelNames are the channels as the pages name them.
var channelNames = map[string]string{domain.ChannelEmail: "e-mail", domain.ChannelSMS: "SMS", domain.ChannelWhatsApp: "WhatsApp"}

// claims reads and checks the request's token: 400 invalid_parameter
// naming token when it is missing, forged or names no channel we know.
func (u *Unsubscribe) claims(r *http.Request) (Claims, error) {
	c, err := u.links.Parse(r.URL.Query().Get("token"))
	if err == nil && channelNames[c.Channel] == "" {
		err = ErrInvalidToken
	}
	if err != nil {
		return Claims{}, httpapi.InvalidParameter("token", "the unsubscribe link is not valid")
	}
	return c, nil
}

func htmlHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
}

// handleUnsubscribePage answers the confirmation page: a GET changes
// nothing (mail scanners fetch links before anyone clicks them).
func (u *Unsubscribe) handleUnsubscribePage(w http.ResponseWriter, r *http.Request) {
	c, err := u.claims(r)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	htmlHeaders(w)
	w.WriteHeader(http.StatusOK)
	_ = pages.Execute(w, struct{ Channel, Action string }{channelNames[c.Channel], UnsubscribePath + "?" + r.URL.RawQuery})
}

// handleUnsubscribe records the opt-out (CustomerConsentChanged,
// unsubscribed, source unsubscribe_link, the token's message): an empty
// 200 for an RFC 8058 one-click POST (body List-Unsubscribe=One-Click),
// the confirmation page for the form. The form needs no CSRF token of its
// own: the signed token in its address is the credential, and a forged
// POST could only unsubscribe the customer the link was made for.
func (u *Unsubscribe) handleUnsubscribe(w http.ResponseWriter, r *http.Request) {
	c, err := u.claims(r)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
	oneClick := false
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") || strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		if err := r.ParseForm(); err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				httpapi.WriteError(w, r, httpapi.PayloadTooLarge(maxFormBody))
				return
			}
			httpapi.WriteError(w, r, httpapi.InvalidParameter("body", "the body is not a form"))
			return
		}
		oneClick = r.PostForm.Get("List-Unsubscribe") == "One-Click"
	}
	now := u.now().UTC()
	_, err = u.cmds.RecordConsent(r.Context(), commands.RecordConsent{Decision: domain.ConsentDecision{
		ShopID: c.ShopID, CustomerID: c.CustomerID, Channel: c.Channel, State: domain.ConsentUnsubscribed,
		Source: domain.ConsentSourceUnsubscribeLink, MessageID: c.MessageID, At: now}},
		commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: "system:unsubscribe_link", Source: "api"})
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) && de.Code == domain.CodeInvalid {
			err = httpapi.InvalidParameter("token", "the unsubscribe link is not valid")
		}
		httpapi.WriteError(w, r, err)
		return
	}
	if oneClick {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		return
	}
	htmlHeaders(w)
	w.WriteHeader(http.StatusOK)
	_ = donePage.Execute(w, struct{ Channel string }{channelNames[c.Channel]})
}
