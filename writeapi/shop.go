package writeapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/readapi"
)

// Shop serves PATCH /api/v1/shop: the shop's notification and AI
// concierge settings.
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
	Concierge     *conciergePatchBody     `json:"concierge"`
}

type conciergePatchBody struct {
	// Policies: each topic present is set; "" or null removes it.
	Policies  map[string]*string `json:"policies"`
	Keywords  *[]string          `json:"keywords"`
	Threshold *float64           `json:"threshold"`
}

type notificationsPatchBody struct {
	Emails     *[]string            `json:"emails"`
	ChatNumber *string              `json:"chat_number"`
	Channels   *map[string][]string `json:"channels"`
	// QuietHours: absent leaves them, null removes them.
	QuietHours json.RawMessage `json:"quiet_hours"`
}

// handlePatch edits the notification and concierge settings (a partial
// edit: absent members stay) and answers 200 with the shop's settings.
// The concierge's edit is validated before either is recorded, so a 422
// changes nothing.
func (s *Shop) handlePatch(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	var body shopPatchBody
	if err := httpapi.DecodeData(w, r, MaxBody, &body); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	var cpatch *domain.ConciergeSettingsPatch
	if c := body.Concierge; c != nil {
		cpatch = &domain.ConciergeSettingsPatch{Policies: c.Policies, Keywords: c.Keywords, Threshold: c.Threshold}
		if cpatch.Keywords != nil && *cpatch.Keywords == nil {
			cpatch.Keywords = &[]string{}
		}
		if cpatch.Empty() {
			httpapi.WriteError(w, r, domain.Invalid("concierge", "send concierge with at least one of policies, keywords, threshold"))
			return
		}
		if _, err := (&domain.ConciergeSettingsAgg{}).Configure(p.ShopID, *cpatch, time.Now()); err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
	}
	npatch, err := notificationsPatch(body.Notifications)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if npatch == nil && cpatch == nil {
		httpapi.WriteError(w, r, domain.Invalid("data.attributes", "send notifications (emails, chat_number, channels, quiet_hours) "+
			"or concierge (policies, keywords, threshold)"))
		return
	}
	var position uint64
	var notified *domain.NotificationSettingsChanged
	var configured *domain.ConciergeSettingsChanged
	if npatch != nil {
		res, ev, err := s.cmds.ConfigureNotifications(r.Context(), commands.ConfigureNotifications{ShopID: p.ShopID, Patch: *npatch}, meta(r, p))
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		position, notified = res.Position, ev
	}
	if cpatch != nil {
		res, ev, err := s.cmds.ConfigureConcierge(r.Context(), commands.ConfigureConcierge{ShopID: p.ShopID, Patch: *cpatch}, meta(r, p))
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		position, configured = max(position, res.Position), ev
	}
	v, err := s.read.Load(r.Context(), p.ShopID)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if notified != nil {
		v.Notifications = notified.Settings
	}
	if configured != nil {
		v.Concierge = configured.Settings
	}
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(position, 10))
	httpapi.WriteResource(w, r, http.StatusOK, readapi.ShopResource(v))
}

// notificationsPatch turns the notifications member into a patch: nil
// when absent, a 422 when it changes nothing or its quiet hours are
// malformed.
func notificationsPatch(n *notificationsPatchBody) (*domain.NotificationSettingsPatch, error) {
	if n == nil {
		return nil, nil
	}
	if n.Emails == nil && n.ChatNumber == nil && n.Channels == nil && n.QuietHours == nil {
		return nil, domain.Invalid("data.attributes", "send notifications with at least one of emails, chat_number, channels, quiet_hours")
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
				return nil, domain.Invalid("notifications.quiet_hours", "quiet_hours is {start, end, time_zone} or null")
			}
		}
		patch.QuietHours = &q
	}
	return &patch, nil
}
