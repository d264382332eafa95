package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gorilla/mux"
	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/app"
	"github.com/cgp-platform/cgp/dataexport"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/outbound"
	"github.com/cgp-platform/cgp/projections/gdprrequests"
	"github.com/cgp-platform/cgp/readapi"
)

// exportRequested wakes the exporter (never blocks).
func (a *App) exportRequested() {
	select {
	case a.exportWake <- struct{}{}:
	default:
	}
}

// mountGDPR registers GET /api/v1/gdpr-requests.
func mountGDPR(a *App, r *mux.Router) {
	readapi.NewGDPRRequests(gdprrequests.NewQueries(a.Store.DB()), a.Auth, mustCursorCodec(a.Core), a.Runtime).Routes(r)
}

// runDataExports is the data-export job (app.Exporter); nil when no
// gdpr_requests projector is registered.
func (a *App) runDataExports() func(ctx context.Context) error {
	if a.exportWake == nil {
		return nil
	}
	cfg := a.Config
	x := &app.Exporter{
		Log: a.Log, Codec: a.Codec, WaitFor: a.Runtime.WaitFor, Requests: gdprrequests.NewQueries(a.Store.DB()),
		Source: &dataexport.Source{Log: a.Log, Codec: a.Codec, DB: a.Store.DB()},
		Delivery: &dataexport.Delivery{
			Sender: &outbound.Sender{AllowPrivate: cfg.OutboundAllowPrivate, TLSConfig: cfg.outboundTLS, UserAgent: "cgp-data-export/1"},
			Mailer: &dataexport.Mailer{Addr: cfg.SMTPAddr, From: cfg.SMTPFrom, Username: cfg.SMTPUsername, Password: cfg.SMTPPassword,
				TLSConfig: cfg.exportSMTPTLS},
		},
		Retry: cfg.exportRetry, Poll: cfg.exportPoll, Wake: a.exportWake, Now: time.Now, Logger: a.Logger,
	}
	return x.Job
}

// newShopsPrivacy is `cgp shops privacy`: it sets where the shop's data
// exports go and prints the new signing secret once. A flag left out
// keeps its current value; an empty one clears it.
func newShopsPrivacy(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop, url, email string
	cmd := &cobra.Command{Use: "privacy", Short: "Set a shop's data-request URL and contact e-mail; prints a new signing secret (shown once)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				ctx := cmd.Context()
				var s domain.Shop
				var current domain.PrivacySettings
				if err := foldStream(ctx, c, domain.ShopStream(shop), s.Apply); err != nil {
					return err
				}
				if err := foldStream(ctx, c, domain.PrivacySettingsStream(shop), current.Apply); err != nil {
					return err
				}
				if !cmd.Flags().Changed("data-request-url") {
					url = current.DataRequestURL
				}
				if !cmd.Flags().Changed("contact-email") {
					email = current.ContactEmail
				}
				if url != "" {
					if err := outbound.CheckURL(url, cfg.OutboundAllowPrivate); err != nil {
						return domain.Invalid("data_request_url", "%s", err.Error())
					}
				}
				secret, err := outbound.NewSecret()
				if err != nil {
					return err
				}
				ev, err := domain.ChangePrivacySettings(&s, url, email, secret, time.Now())
				if err != nil {
					return err
				}
				data, err := c.Codec.Encode(ctx, eventlog.DeterministicID("ShopPrivacySettingsChanged", shop, secret), shop, ev, time.Now(),
					eventlog.Metadata{Actor: "cli", Source: "cli"})
				if err != nil {
					return err
				}
				res, err := c.Log.Append(ctx, domain.PrivacySettingsStream(shop), eventlog.Any(), data)
				if err != nil {
					return fmt.Errorf("record privacy settings: %w", err)
				}
				return printJSON(stdout, map[string]any{"id": shop, "data_request_url": ev.DataRequestURL, "contact_email": ev.ContactEmail,
					"signing_secret": secret, "position": res.Position})
			})
		}}
	f := cmd.Flags()
	f.StringVar(&shop, "shop", "", "shop id (shop_…)")
	f.StringVar(&url, "data-request-url", "", "HTTPS URL that receives the signed data exports; empty: e-mail them")
	f.StringVar(&email, "contact-email", "", "e-mail address that receives the data exports when no URL is set; empty: the shop's contact e-mail")
	return cmd
}

// foldStream applies every event of stream to apply.
func foldStream(ctx context.Context, c *Core, stream string, apply func(domain.Event)) error {
	for from := uint64(0); ; {
		evs, err := c.Log.ReadStream(ctx, stream, from, 500)
		if err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		for i := range evs {
			d, err := c.Codec.Decode(ctx, &evs[i])
			if err != nil {
				return err
			}
			apply(d.Event)
		}
		if len(evs) < 500 {
			return nil
		}
		from = evs[len(evs)-1].Revision + 1
	}
}

// newGDPRRequests is `cgp gdpr requests --shop ID`: the shop's GDPR
// requests with their delivery status, as the read model keeps them.
func newGDPRRequests(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop string
	cmd := &cobra.Command{Use: "requests", Short: "List a shop's GDPR data requests and their delivery status", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				store, err := c.Config.openReadModels()
				if err != nil {
					return err
				}
				defer store.Close()
				q := gdprrequests.NewQueries(store.DB())
				built, err := q.Built(cmd.Context())
				if err != nil {
					return fmt.Errorf("read models: %w", err)
				}
				if !built { // the server never ran this version
					return printJSON(stdout, map[string]any{"shop_id": shop, "requests": []any{}})
				}
				out := []readapi.GDPRRequestAttributes{}
				var after *gdprrequests.Key
				ids := []string{}
				for {
					page, next, err := q.Requests(cmd.Context(), shop, gdprrequests.Page{After: after, Limit: 100})
					if err != nil {
						return err
					}
					for i := range page {
						out = append(out, readapi.GDPRRequestResource(&page[i]).Attributes.(readapi.GDPRRequestAttributes))
						ids = append(ids, page[i].ID)
					}
					if next == nil {
						break
					}
					after = next
				}
				type row struct {
					ID string `json:"id"`
					readapi.GDPRRequestAttributes
				}
				rows := make([]row, len(out))
				for i := range out {
					rows[i] = row{ID: ids[i], GDPRRequestAttributes: out[i]}
				}
				return printJSON(stdout, map[string]any{"shop_id": shop, "requests": rows})
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	return cmd
}
