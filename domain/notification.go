package domain

import (
	"net/mail"
	"slices"
	"strings"
	"time"
)

// Notifications (issue 18, point 2): every anomaly of a shop is a
// notification in-app; by e-mail (to the shop's notification addresses,
// its contact e-mail by default) and by chat message (a WhatsApp template
// to the merchant's number) as the shop's settings choose per severity: P1
// at once, P2 in an hourly digest, P3 in-app only by default. Quiet hours
// hold P2 and P3 e-mail and chat (never P1). An anomaly reaches e-mail and
// chat once per dedupe key per day, however often it is raised again; a P1
// left unread and unresolved is sent again after RenotifyAfter.

// PrefixNotification is the id prefix of a notification.
const PrefixNotification = "ntf_"

// Notification channels besides in-app (always on).
const (
	NotifyEmail = "email"
	NotifyChat  = "chat"
)

// NotifyChannels are the channels a severity may choose.
func NotifyChannels() []string { return []string{NotifyEmail, NotifyChat} }

// Notification delivery timing.
const (
	// RenotifyAfter is how long a P1 may stay unread and unresolved before
	// its e-mail and chat message are sent again (at most MaxRenotify
	// times).
	RenotifyAfter = 4 * time.Hour
	MaxRenotify   = 2
	// DigestEvery is the period of the P2 and P3 digests.
	DigestEvery = time.Hour
	// NotifyWindow is the window of the once-per-dedupe-key rule.
	NotifyWindow = 24 * time.Hour
)

// Notification settings limits.
const (
	MaxNotifyEmails = 10
)

// NotificationID is the notification of an anomaly.
func NotificationID(anomalyID string) string {
	return IDFromExternal(PrefixNotification, "notification", "", anomalyID)
}

// QuietHours hold P2 and P3 e-mail and chat from Start to End (local
// "HH:MM" times in TimeZone, an IANA name; End before Start spans
// midnight).
type QuietHours struct {
	Start    string `json:"start"`
	End      string `json:"end"`
	TimeZone string `json:"time_zone"`
}

// NotificationSettings are a shop's notification settings. Emails empty
// means the shop's contact e-mail.
type NotificationSettings struct {
	Emails     []string            `json:"emails"`
	ChatNumber string              `json:"chat_number,omitempty"`
	Channels   map[string][]string `json:"channels"`
	QuietHours *QuietHours         `json:"quiet_hours,omitempty"`
}

// DefaultNotificationSettings: e-mail and chat for P1 and P2, in-app only
// for P3, no quiet hours.
func DefaultNotificationSettings() NotificationSettings {
	return NotificationSettings{Emails: []string{}, Channels: map[string][]string{
		SeverityP1: {NotifyEmail, NotifyChat}, SeverityP2: {NotifyEmail, NotifyChat}, SeverityP3: {}}}
}

// Wants tells whether the settings send severity's notifications on
// channel.
func (s NotificationSettings) Wants(severity, channel string) bool {
	return slices.Contains(s.Channels[severity], channel)
}

// Quiet tells whether t falls in the quiet hours, and when they end.
func (s NotificationSettings) Quiet(t time.Time) (bool, time.Time) {
	q := s.QuietHours
	if q == nil {
		return false, time.Time{}
	}
	loc, err := time.LoadLocation(q.TimeZone)
	if err != nil {
		return false, time.Time{}
	}
	start, err1 := time.Parse("15:04", q.Start)
	end, err2 := time.Parse("15:04", q.End)
	if err1 != nil || err2 != nil || q.Start == q.End {
		return false, time.Time{}
	}
	local := t.In(loc)
	day := func(d time.Time, hm time.Time) time.Time {
		return time.Date(d.Year(), d.Month(), d.Day(), hm.Hour(), hm.Minute(), 0, 0, loc)
	}
	from, to := day(local, start), day(local, end)
	if !to.After(from) { // spans midnight
		if local.Before(to) {
			from = from.AddDate(0, 0, -1)
		} else {
			to = to.AddDate(0, 0, 1)
		}
	}
	if !local.Before(from) && local.Before(to) {
		return true, to.UTC()
	}
	return false, time.Time{}
}

func notificationEvents() []EventSpec {
	return []EventSpec{
		{Name: "NotificationSettingsChanged", Version: 1, New: func() Event { return &NotificationSettingsChanged{} }},
		{Name: "NotificationRead", Version: 1, New: func() Event { return &NotificationRead{} }},
		{Name: "NotificationsSent", Version: 1, New: func() Event { return &NotificationsSent{} }},
	}
}

// NotificationSettingsStream is the stream of a shop's notification
// settings.
func NotificationSettingsStream(shopID string) string { return "notificationsettings-" + shopID }

// NotificationStream is the stream of one notification's reads.
func NotificationStream(notificationID string) string { return "notification-" + notificationID }

// NotificationSettingsChanged: a shop changed its notification settings
// (Settings are all of them as they now are). The addresses and the chat
// number are the merchant's, not a customer's: they are kept as they are
// and erased with the shop.
type NotificationSettingsChanged struct {
	ShopID    string               `json:"shop_id"`
	Settings  NotificationSettings `json:"settings"`
	ChangedAt time.Time            `json:"changed_at"`
}

// EventType implements Event.
func (NotificationSettingsChanged) EventType() string { return "NotificationSettingsChanged" }

// NotificationRead: the merchant read a notification (it acknowledges a
// P1: no reminder follows).
type NotificationRead struct {
	NotificationID string    `json:"notification_id"`
	AnomalyID      string    `json:"anomaly_id"`
	ShopID         string    `json:"shop_id"`
	ReadAt         time.Time `json:"read_at"`
}

// EventType implements Event.
func (NotificationRead) EventType() string { return "NotificationRead" }

// NotificationsSent: a notification message went out on a channel (one
// e-mail or chat message for one anomaly, or a digest of several). No
// address: the settings say where it went.
type NotificationsSent struct {
	DeliveryID string    `json:"delivery_id"`
	ShopID     string    `json:"shop_id,omitempty"`
	Channel    string    `json:"channel"`
	AnomalyIDs []string  `json:"anomaly_ids"`
	Digest     bool      `json:"digest,omitempty"`
	Reminder   int       `json:"reminder,omitempty"`
	SentAt     time.Time `json:"sent_at"`
}

// EventType implements Event.
func (NotificationsSent) EventType() string { return "NotificationsSent" }

// NotificationSettingsAgg is the aggregate of a shop's settings.
type NotificationSettingsAgg struct {
	Settings   NotificationSettings
	Configured bool
}

// Apply folds an event.
func (a *NotificationSettingsAgg) Apply(e Event) {
	if ev, ok := e.(*NotificationSettingsChanged); ok {
		a.Settings, a.Configured = ev.Settings, true
	}
}

// NotificationSettingsPatch is a partial edit: nil members stay.
type NotificationSettingsPatch struct {
	Emails     *[]string
	ChatNumber *string
	Channels   *map[string][]string
	// QuietHours: set to a pointer to nil to remove them.
	QuietHours **QuietHours
}

// Configure decides an edit of the settings (422 naming the field).
func (a *NotificationSettingsAgg) Configure(shopID string, p NotificationSettingsPatch, now time.Time) (*NotificationSettingsChanged, error) {
	s := a.Settings
	if !a.Configured {
		s = DefaultNotificationSettings()
	}
	if p.Emails != nil {
		if len(*p.Emails) > MaxNotifyEmails {
			return nil, Invalid("notifications.emails", "at most %d addresses", MaxNotifyEmails)
		}
		out := make([]string, 0, len(*p.Emails))
		for _, e := range *p.Emails {
			addr, err := mail.ParseAddress(strings.TrimSpace(e))
			if err != nil || addr.Name != "" || len(addr.Address) > 254 || strings.ContainsAny(addr.Address, "\r\n") {
				return nil, Invalid("notifications.emails", "each address is a plain e-mail address")
			}
			if !slices.Contains(out, addr.Address) {
				out = append(out, addr.Address)
			}
		}
		s.Emails = out
	}
	if p.ChatNumber != nil {
		n := strings.TrimSpace(*p.ChatNumber)
		if n != "" {
			d := PhoneDigits(n)
			if d == "" || len(d) < 8 || len(d) > 15 || strings.Trim(n, "0123456789+ -().") != "" {
				return nil, Invalid("notifications.chat_number", "the chat number is an international phone number (E.164)")
			}
			n = d
		}
		s.ChatNumber = n
	}
	if p.Channels != nil {
		ch := map[string][]string{}
		for sev, list := range *p.Channels {
			if !slices.Contains(Severities(), sev) {
				return nil, Invalid("notifications.channels", "severities are P1, P2 and P3")
			}
			out := []string{}
			for _, c := range list {
				if !slices.Contains(NotifyChannels(), c) {
					return nil, Invalid("notifications.channels", "channels are email and chat (in-app is always on)")
				}
				if !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
			ch[sev] = out
		}
		for _, sev := range Severities() {
			if _, ok := ch[sev]; !ok {
				ch[sev] = slices.Clone(s.Channels[sev])
				if ch[sev] == nil {
					ch[sev] = []string{}
				}
			}
		}
		s.Channels = ch
	}
	if p.QuietHours != nil {
		q := *p.QuietHours
		if q != nil {
			if _, err := time.Parse("15:04", q.Start); err != nil || len(q.Start) != 5 {
				return nil, Invalid("notifications.quiet_hours.start", "start is a local time HH:MM")
			}
			if _, err := time.Parse("15:04", q.End); err != nil || len(q.End) != 5 || q.End == q.Start {
				return nil, Invalid("notifications.quiet_hours.end", "end is a local time HH:MM other than start")
			}
			if q.TimeZone == "" || len(q.TimeZone) > 64 {
				return nil, Invalid("notifications.quiet_hours.time_zone", "time_zone is an IANA time zone such as Europe/Paris")
			}
			if _, err := time.LoadLocation(q.TimeZone); err != nil || q.TimeZone == "Local" {
				return nil, Invalid("notifications.quiet_hours.time_zone", "time_zone is an IANA time zone such as Europe/Paris")
			}
			c := *q
			q = &c
		}
		s.QuietHours = q
	}
	if s.Emails == nil {
		s.Emails = []string{}
	}
	return &NotificationSettingsChanged{ShopID: shopID, Settings: s, ChangedAt: now.UTC()}, nil
}

// NotificationReads is the aggregate of a notification's reads.
type NotificationReads struct{ Read bool }

// Apply folds an event.
func (a *NotificationReads) Apply(e Event) {
	if _, ok := e.(*NotificationRead); ok {
		a.Read = true
	}
}

// MarkRead decides reading a notification: nil when read already.
func (a *NotificationReads) MarkRead(shopID, notificationID, anomalyID string, now time.Time) *NotificationRead {
	if a.Read {
		return nil
	}
	return &NotificationRead{NotificationID: notificationID, AnomalyID: anomalyID, ShopID: shopID, ReadAt: now.UTC()}
}
