package writeapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/readapi"
)

// Shop serves PATCH /api/v1/shop: the shop's notification settings.
type Shop struct {
	idem func(http.Handler) http.Handler
	cmds *commands.Handler
	auth *auth.Authenticator
	read *readapi.Shop
}

// NewShop returns the shop settings' write handler; read renders the
// answer.
func NewShop(cmds *commands.Handler, a *auth.Authenticator, idem func(http.Handler) http.Handler, read *readapi.Shop) *Shop {
	return &Shop{cmds: cmds, auth: a, idem: idem, read: read}
}

// Routes registers PATCH /api/v1/shop.
func (s *Shop) Routes(r *mux.Router) {
	r.Handle("/api/v1/shop", httpapi.Beta(s.auth.Require(readapi.ScopeShopSettings, s.idem(http.HandlerFunc(s.handlePatch))))).
		Methods(http.MethodPatch)
}

type shopPatchBody struct {
	Notifications *notificationsPatchBody `json:"notifications"`
}

type notificationsPatchBody struct {
	Emails     *[]string            `json:"emails"`
	ChatNumber *string              `json:"chat_number"`
	Channels   *map[string][]string `json:"channels"`
	// QuietHours: absent leaves them, null removes them.
	QuietHours json.RawMessage `json:"quiet_hours"`
}

// handlePatch edits the notification settings (a partial edit: absent
// members stay) and answers 200 with the shop's settings.
func (s *Shop) handlePatch(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body shopPatchBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	n := body.Notifications
	if n == nil || (n.Emails == nil && n.ChatNumber == nil && n.Channels == nil && n.QuietHours == nil) {
		httpapi.WriteError(w, r, domain.Invalid("data.attributes", "send notifications with at least one of emails, chat_number, channels, quiet_hours"))
		return
	}
	patch := domain.NotificationSettingsPatch{Emails: n.Emails, ChatNumber: n.ChatNumber, Channels: n.Channels}
	if n.Emails != nil && *n.Emails == nil {
		patch.Emails = &[]string{}
	}
	if n.QuietHours != nil {
		var q *domain.QuietHours
		if !bytes.Equal(bytes.TrimSpace(n.QuietHours), []byte("null")) {
			dec := json.NewDecoder(bytes.NewReader(n.QuietHours))
			dec.DisallowUnknownFields()
			q = &domain.QuietHours{}
			if err := dec.Decode(q); err != nil {
				httpapi.WriteError(w, r, domain.Invalid("notifications.quiet_hours", "quiet_hours is {start, end, time_zone} or null"))
				return
			}
		}
		patch.QuietHours = &q
	}
	res, ev, err := s.cmds.ConfigureNotifications(r.Context(), commands.ConfigureNotifications{ShopID: p.ShopID, Patch: patch}, meta(r, p))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	v, err := s.read.Load(r.Context(), p.ShopID)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	v.Notifications = ev.Settings
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteResource(w, r, http.StatusOK, readapi.ShopResource(v))
}
