package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/domain"
)

// newShopsNotifications is `cgp shops notifications`: it changes where a
// shop's notifications go (the same command as PATCH /api/v1/shop). A flag
// left out keeps its setting.
func newShopsNotifications(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop, chat, quiet, zone string
	var emails []string
	var p1, p2, p3 string
	cmd := &cobra.Command{Use: "notifications", Short: "Set where a shop's notifications go: e-mail addresses, chat number, channels per severity, quiet hours",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			var p domain.NotificationSettingsPatch
			f := cmd.Flags()
			if f.Changed("email") {
				p.Emails = &emails
			}
			if f.Changed("chat-number") {
				p.ChatNumber = &chat
			}
			if f.Changed("p1") || f.Changed("p2") || f.Changed("p3") {
				ch := map[string][]string{}
				for sev, v := range map[string]*string{domain.SeverityP1: &p1, domain.SeverityP2: &p2, domain.SeverityP3: &p3} {
					if f.Changed(strings.ToLower(sev)) {
						ch[sev] = splitList(*v)
					}
				}
				p.Channels = &ch
			}
			if f.Changed("quiet-hours") {
				var q *domain.QuietHours
				if quiet != "" {
					start, end, ok := strings.Cut(quiet, "-")
					if !ok {
						return fmt.Errorf("--quiet-hours is HH:MM-HH:MM, or empty for none")
					}
					q = &domain.QuietHours{Start: start, End: end, TimeZone: zone}
				}
				p.QuietHours = &q
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				s, err := app.ConfigureNotifications(cmd.Context(), c, shop, p)
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"shop_id": shop, "notifications": s})
			})
		}}
	f := cmd.Flags()
	f.StringVar(&shop, "shop", "", "shop id (shop_…)")
	f.StringSliceVar(&emails, "email", nil, "notification address (repeat or comma-separate; empty: the shop's contact e-mail)")
	f.StringVar(&chat, "chat-number", "", "the merchant's WhatsApp number in E.164 (empty: no chat messages)")
	f.StringVar(&p1, "p1", "", "channels of P1 notifications besides in-app: email,chat (empty: none)")
	f.StringVar(&p2, "p2", "", "channels of P2 notifications (hourly digest) besides in-app: email,chat (empty: none)")
	f.StringVar(&p3, "p3", "", "channels of P3 notifications (hourly digest) besides in-app: email,chat (empty: none)")
	f.StringVar(&quiet, "quiet-hours", "", "HH:MM-HH:MM local time when P2 and P3 digests wait (never P1); empty: none")
	f.StringVar(&zone, "time-zone", "UTC", "IANA time zone of --quiet-hours")
	return cmd
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	out := []string{}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
