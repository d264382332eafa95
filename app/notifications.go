package app

import (
	"context"
	"fmt"
	"net/mail"
	"path/filepath"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cgp-platform/cgp/channels"
	"github.com/cgp-platform/cgp/channels/email"
	"github.com/cgp-platform/cgp/channels/whatsapp"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/notify"
	"github.com/cgp-platform/cgp/projections/messaging"
	"github.com/cgp-platform/cgp/sending"

	"github.com/cgp-platform/cgp/projections/conciergereplies"
	"github.com/cgp-platform/cgp/projections/notifications"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/writeapi"
)

// mountNotifications registers the in-app notifications.
func mountNotifications(a *App, r *mux.Router, idem Middleware) {
	q := notifications.NewQueries(a.Store.DB())
	readapi.NewNotifications(q, a.Auth, a.cursors, a.Runtime).Routes(r)
	writeapi.NewNotifications(a.Commands, a.Auth, idem, q).Routes(r)
}

// mountShop registers the shop's settings (GET and PATCH /api/v1/shop).
func mountShop(a *App, r *mux.Router, idem Middleware) {
	read := readapi.NewShop(a.Tenancy, notifications.NewQueries(a.Store.DB()), conciergereplies.NewQueries(a.Store.DB()), a.Auth, a.Runtime,
		readapi.PlatformGrants{Declared: a.Platform.Declared, Reauthorize: a.Platform.Reauthorize})
	read.Routes(r)
	writeapi.NewShop(a.Commands, a.Auth, idem, read).Routes(r)
}

// DefaultNotifyChatTemplate is the WhatsApp template of the chat
// notifications when the configuration names none.
const DefaultNotifyChatTemplate = "merchant_alert"

// NotifyFile is the notifier's store in the data directory.
const NotifyFile = "notify.db"

// NotifyHooks are the notifier's test settings (zero: production's).
type NotifyHooks struct {
	Schedule []time.Duration
	Now      func() time.Time
	// Opened, when set, is given the notifier once open.
	Opened func(*notify.Service)
}

// openNotify opens the notifier: e-mail through the SMTP relay when one
// is configured, chat messages as WhatsApp templates from the shop's own
// connected number.
func openNotify(ctx context.Context, cfg Config, core *Core, a *App, reg prometheus.Registerer) (*notify.Service, error) {
	dc := notify.DispatcherConfig{OperatorEmail: cfg.OperatorEmail, Schedule: cfg.Test.Notify.Schedule, Now: cfg.Test.Notify.Now}
	if cfg.SMTPAddr != "" {
		from, err := mail.ParseAddress(cfg.SMTPFrom) // validated by Config.Validate
		if err != nil {
			return nil, fmt.Errorf("smtp-from: %w", err)
		}
		dc.From = *from
		dc.Email = &email.Sender{Addr: cfg.SMTPAddr, Username: cfg.SMTPUsername, Password: cfg.SMTPPassword,
			TLSConfig: cfg.Test.ExportSMTPTLS}
	}
	wa, err := whatsAppClient(cfg)
	if err != nil {
		return nil, err
	}
	template := cfg.NotifyChatTemplate
	if template == "" {
		template = DefaultNotifyChatTemplate
	}
	dc.Chat = chatAlerts{client: wa, accounts: sendingAccounts{q: messaging.NewQueries(a.Store.DB()), a: a},
		template: template, language: cfg.NotifyChatLanguage}
	svc, err := notify.Open(ctx, notify.Config{Path: filepath.Join(cfg.DataDir, NotifyFile), Log: core.Log, Codec: core.Codec,
		Commands: core.Commands, Logger: core.Logger, Registry: reg, Dispatch: dc})
	if err == nil && cfg.Test.Notify.Opened != nil {
		cfg.Test.Notify.Opened(svc)
	}
	return svc, err
}

// notifyJob runs the notifier.
func notifyJob(a *App) func(ctx context.Context) error { return a.Notify.Run }

// chatAlerts sends chat notifications as a WhatsApp template (title and
// shop domain as its body's two parameters) from the shop's connected
// number to the merchant's.
type chatAlerts struct {
	client             *whatsapp.Client
	accounts           sendingAccounts
	template, language string
}

func (c chatAlerts) SendAlert(ctx context.Context, shop, number string, al notify.Alert) error {
	phone, token, err := c.accounts.SendingAccount(ctx, shop)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return channels.NewSendError(sending.CodeNoAccount, false, 0, err)
	}
	if err != nil {
		return err
	}
	title := al.Anomalies[0].Title
	if len(al.Anomalies) > 1 {
		title = fmt.Sprintf("%d alerts, the first: %s", len(al.Anomalies), title)
	}
	if al.Reminder > 0 {
		title = "Reminder: " + title
	}
	language := c.language
	if language == "" {
		language = domain.DefaultLanguage
	}
	_, err = c.client.SendTemplate(ctx, phone, token, number, whatsapp.Template{Name: c.template, Language: language,
		Body: []string{"[" + al.Anomalies[0].Severity + "] " + title, al.ShopDomain}})
	return err
}

// ConfigureNotifications changes a shop's notification settings (cgp
// shops notifications); 404 for a shop that does not exist.
func ConfigureNotifications(ctx context.Context, c *Core, shopID string, p domain.NotificationSettingsPatch) (domain.NotificationSettings, error) {
	var s domain.Shop
	if err := foldStream(ctx, c, domain.ShopStream(shopID), s.Apply); err != nil {
		return domain.NotificationSettings{}, err
	}
	if !s.Exists {
		return domain.NotificationSettings{}, domain.NotFound("shop")
	}
	_, ev, err := c.Commands.ConfigureNotifications(ctx, commands.ConfigureNotifications{ShopID: shopID, Patch: p},
		commands.Meta{Actor: "cli", Source: "cli"})
	if err != nil {
		return domain.NotificationSettings{}, err
	}
	return ev.Settings, nil
}
