package app

import (
	"context"
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cgp-platform/cgp/channels/email"
	"github.com/cgp-platform/cgp/channels/whatsapp"
	"github.com/cgp-platform/cgp/consent"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/projections/messaging"
	"github.com/cgp-platform/cgp/projections/tenancy"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/reviews"
	"github.com/cgp-platform/cgp/sending"
)

// SendingFile is the sending side's store in the data directory.
const SendingFile = "sending.db"

// SendingHooks are the sending side's test settings (zero: production's).
type SendingHooks struct {
	Schedule        []time.Duration
	ReconcileWindow time.Duration
	Timeout         time.Duration
	Now             func() time.Time
	// Opened, when set, is given the sending side once open and the
	// review tokens its review requests carry, so a test can wait for the
	// outbox reactor and read the tokens.
	Opened func(*sending.Service, reviews.Tokens)
}

// openSending opens the sending side with its channels: WhatsApp through
// the Cloud API at WhatsAppBaseURL, e-mail through the SMTP relay when one
// is configured.
func openSending(ctx context.Context, cfg Config, core *Core, a *App, reg prometheus.Registerer) (*sending.Service, error) {
	h := cfg.Test.Sending
	window := cfg.MessageReconcileWindow
	if h.ReconcileWindow > 0 {
		window = h.ReconcileWindow
	}
	wa, err := whatsAppClient(cfg)
	if err != nil {
		return nil, err
	}
	msgs := messaging.NewQueries(a.Store.DB())
	chans := map[string]sending.Channel{
		domain.ChannelWhatsApp: sending.WhatsApp{Client: wa, Accounts: sendingAccounts{q: msgs, a: a}},
	}
	if cfg.SMTPAddr != "" {
		from, err := mail.ParseAddress(cfg.SMTPFrom) // validated by Config.Validate
		if err != nil {
			return nil, fmt.Errorf("smtp-from: %w", err)
		}
		links := a.UnsubscribeLinks()
		chans[domain.ChannelEmail] = sending.Email{From: *from, Sender: &email.Sender{Addr: cfg.SMTPAddr, Username: cfg.SMTPUsername,
			Password: cfg.SMTPPassword, TLSConfig: cfg.Test.ExportSMTPTLS},
			Unsubscribe: func(ref domain.MessageRef) string {
				return links.URL(consent.Claims{ShopID: ref.ShopID, CustomerID: ref.CustomerID, Channel: ref.Channel, MessageID: ref.MessageID})
			}}
	}
	smsClient, err := cfg.SMSClient()
	if err != nil {
		return nil, err
	}
	if smsClient != nil {
		chans[domain.ChannelSMS] = sending.SMS{Client: smsClient}
	}
	svc, err := sending.Open(ctx, sending.Config{
		Path: filepath.Join(cfg.DataDir, SendingFile), Log: core.Log, Codec: core.Codec, Commands: core.Commands,
		Logger: core.Logger, Registry: reg,
		Dispatch: sending.DispatcherConfig{Directory: sendingDirectory{customers: customers.NewQueries(a.Store.DB()), tenancy: a.Tenancy},
			Journeys: sendingJourneys{journeys: journeys.NewQueries(a.Store.DB()), customers: customers.NewQueries(a.Store.DB()),
				runtime: a.Runtime},
			Links:    flowLinks{tokens: a.ReviewTokens(), tenancy: a.Tenancy},
			Channels: chans, Schedule: h.Schedule, ReconcileWindow: window, Timeout: h.Timeout, Now: h.Now},
	})
	if err == nil && h.Opened != nil {
		h.Opened(svc, a.ReviewTokens())
	}
	return svc, err
}

// ReviewTokens makes and reads the review tokens of review requests.
func (a *App) ReviewTokens() reviews.Tokens {
	return reviews.Tokens{Key: deriveKey(a.CursorKey, "cgp review tokens v1")}
}

// flowLinks makes the review-request links: the flow's review page, or
// https://{shop domain}/pages/reviews, with the review_token parameter.
type flowLinks struct {
	tokens  reviews.Tokens
	tenancy *tenancy.Queries
}

func (f flowLinks) ReviewLink(ctx context.Context, shop, customer, order, page string, issued time.Time) (string, error) {
	if page == "" {
		s, err := f.tenancy.ShopByID(ctx, shop)
		if err != nil {
			return "", err
		}
		page = "https://" + s.Domain + "/pages/reviews"
	}
	u, err := url.Parse(page)
	if err != nil {
		return "", fmt.Errorf("review page: %w", err)
	}
	q := u.Query()
	q.Set("review_token", f.tokens.Token(reviews.Claims{ShopID: shop, CustomerID: customer, OrderID: order,
		Expires: issued.Add(reviews.TokenLifetime)}))
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// whatsAppClient is the Cloud API client of the configured address.
func whatsAppClient(cfg Config) (*whatsapp.Client, error) {
	wa, err := whatsapp.New(whatsapp.Config{BaseURL: cfg.WhatsAppBaseURL(), HTTP: &http.Client{
		Transport:     &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}})
	if err != nil {
		return nil, fmt.Errorf("whatsapp client: %w", err)
	}
	return wa, nil
}

// sendingJob runs the outbox reactor and the dispatcher.
func sendingJob(a *App) func(ctx context.Context) error { return a.Sending.Run }

// mountMessages registers the message log.
func mountMessages(a *App, r *mux.Router, _ Middleware) {
	readapi.NewMessages(messaging.NewQueries(a.Store.DB()), a.Auth, a.cursors, a.Runtime).Routes(r)
}

// sendingAccounts opens a shop's sealed WhatsApp access token.
type sendingAccounts struct {
	q *messaging.Queries
	a *App
}

func (s sendingAccounts) SendingAccount(ctx context.Context, shop string) (string, string, error) {
	phone, sealed, err := s.q.SendingAccount(ctx, shop)
	if err != nil {
		return "", "", err
	}
	token, err := s.a.Core.Codec.OpenSecret(ctx, shop, messaging.SecretLabel, sealed)
	if err != nil {
		return "", "", err
	}
	return phone, token, nil
}

// sendingDirectory reads recipients from the customers read model.
type sendingDirectory struct {
	customers *customers.Queries
	tenancy   *tenancy.Queries
}

func (d sendingDirectory) Recipients(ctx context.Context, shop, channel string, ids []string) (map[string]sending.Recipient, error) {
	found, err := d.customers.Contacts(ctx, shop, channel, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]sending.Recipient, len(found))
	for id, c := range found {
		out[id] = sending.Recipient{Address: c.Address, FirstName: c.FirstName, LastName: c.LastName, Consented: c.Consented,
			OptedOut: c.OptedOut}
	}
	return out, nil
}

func (d sendingDirectory) ShopName(ctx context.Context, shop string) (string, error) {
	s, err := d.tenancy.ShopByID(ctx, shop)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(s.Domain, ".myshopify.com"), nil
}

// sendingJourneys reads the journeys and their customers for the journey
// runner.
type sendingJourneys struct {
	journeys  *journeys.Queries
	customers *customers.Queries
	runtime   *projections.Runtime
}

// Seen tells whether the customers and journeys read models folded the log
// up to pos.
func (j sendingJourneys) Seen(pos uint64) bool {
	cp := j.runtime.Checkpoints()
	return uint64(cp[customers.Name]) >= pos && uint64(cp[journeys.Name]) >= pos
}

func (j sendingJourneys) Status(ctx context.Context, shop, id string) (string, error) {
	jr, err := j.journeys.Journey(ctx, shop, id)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return domain.JourneyStatusArchived, nil // erased with its shop, or never here: nothing to run
	}
	if err != nil {
		return "", err
	}
	return jr.Status, nil
}

func (j sendingJourneys) Steps(ctx context.Context, shop, id string, version int) ([]domain.JourneyStep, error) {
	return j.journeys.Steps(ctx, shop, id, version)
}

// Holds evaluates a condition against the customers read model: an order
// since the enrollment (its last order's time), a tag (its own or the
// platform's), consent to marketing on a channel now.
func (j sendingJourneys) Holds(ctx context.Context, shop, customer string, s domain.JourneyStep, since time.Time) (bool, error) {
	switch s.Condition {
	case domain.ConditionAcceptsMarketing:
		c, err := j.customers.Contacts(ctx, shop, s.Channel, []string{customer})
		return c[customer].Consented, err
	}
	c, err := j.customers.Get(ctx, shop, customer)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ordered := c.LastOrderAt.After(since)
	switch s.Condition {
	case domain.ConditionOrderedSinceEnrollment:
		return ordered, nil
	case domain.ConditionNotOrderedSinceEnrollment:
		return !ordered, nil
	case domain.ConditionHasTag:
		return slices.Contains(c.Tags, s.Tag) || slices.Contains(c.PlatformTags, s.Tag), nil
	}
	return false, nil
}
