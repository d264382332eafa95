package writeapi

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/readapi"
)

// Flows serves the edit of the shop's settings of a built-in flow (beta).
type Flows struct {
	idem func(http.Handler) http.Handler
	cmds *commands.Handler
	auth *auth.Authenticator
}

// NewFlows returns the flow write handler; idem wraps it in
// Idempotency-Key handling.
func NewFlows(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler) *Flows {
	return &Flows{cmds: cmds, auth: a, idem: idem}
}

// Routes registers PATCH /api/v1/flows/{flow}.
func (f *Flows) Routes(r *mux.Router) {
	r.Handle("/api/v1/flows/{flow}", httpapi.Beta(f.auth.Require(ScopeJourneysWrite, f.idem(http.HandlerFunc(f.handlePatch))))).
		Methods(http.MethodPatch)
}

// flowPatchBody is a partial edit of a flow's settings: an absent (or
// null) member stays as it is; any other member is an unknown attribute
// (422 naming it).
type flowPatchBody struct {
	Enabled      *bool     `json:"enabled"`
	DelayMinutes *int      `json:"delay_minutes"`
	Channel      *string   `json:"channel"`
	Subject      *string   `json:"subject"`
	Text         *string   `json:"text"`
	HTML         *string   `json:"html"`
	Template     *string   `json:"template"`
	Language     *string   `json:"language"`
	Parameters   *[]string `json:"parameters"`
	LinkURL      *string   `json:"link_url"`
}

func (b flowPatchBody) empty() bool {
	return b.Enabled == nil && b.DelayMinutes == nil && b.Channel == nil && b.Subject == nil && b.Text == nil && b.HTML == nil &&
		b.Template == nil && b.Language == nil && b.Parameters == nil && b.LinkURL == nil
}

// handlePatch edits the shop's settings of a flow and answers 200 with
// the flow as the FlowConfigured event left it (X-Event-Position tells a
// GET what to wait for). A name that is no built-in flow is not found;
// settings that would not send are a 422 naming the attribute.
func (f *Flows) handlePatch(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body flowPatchBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if body.empty() {
		httpapi.WriteError(w, r, domain.Invalid("data.attributes",
			"send at least one of enabled, delay_minutes, channel, subject, text, html, template, language, parameters, link_url"))
		return
	}
	patch := domain.FlowPatch{Enabled: body.Enabled, DelayMinutes: body.DelayMinutes, Channel: body.Channel, Subject: body.Subject,
		Text: body.Text, HTML: body.HTML, Template: body.Template, Language: body.Language, Parameters: body.Parameters, LinkURL: body.LinkURL}
	res, ev, err := f.cmds.ConfigureFlow(r.Context(), commands.ConfigureFlow{ShopID: p.ShopID, Flow: mux.Vars(r)["flow"], Patch: patch},
		meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteResource(w, r, http.StatusOK, readapi.FlowResource(journeys.FlowFromEvent(ev)))
}
