package app

// The CLI's privacy commands: where a shop's data exports go
// (`cgp shops privacy`) and the list of its GDPR requests
// (`cgp gdpr requests`).

import (
	"context"
	"fmt"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/outbound"
	"github.com/cgp-platform/cgp/projections/gdprrequests"
	"github.com/cgp-platform/cgp/readapi"
)

// PrivacyChange is a change of a shop's privacy settings: a nil field
// keeps its current value, an empty one clears it.
type PrivacyChange struct {
	ShopID         string
	DataRequestURL *string
	ContactEmail   *string
}

// PrivacyChanged is the recorded change, with the new signing secret
// (shown once).
type PrivacyChanged struct {
	ID             string `json:"id"`
	DataRequestURL string `json:"data_request_url"`
	ContactEmail   string `json:"contact_email"`
	SigningSecret  string `json:"signing_secret"`
	Position       uint64 `json:"position"`
}

// ChangePrivacySettings sets where the shop's data exports go, with a new
// signing secret. allowPrivate lets the URL name a private address
// (Config.OutboundAllowPrivate).
func ChangePrivacySettings(ctx context.Context, c *Core, in PrivacyChange, allowPrivate bool) (PrivacyChanged, error) {
	var s domain.Shop
	var current domain.PrivacySettings
	if err := foldStream(ctx, c, domain.ShopStream(in.ShopID), s.Apply); err != nil {
		return PrivacyChanged{}, err
	}
	if err := foldStream(ctx, c, domain.PrivacySettingsStream(in.ShopID), current.Apply); err != nil {
		return PrivacyChanged{}, err
	}
	url, email := current.DataRequestURL, current.ContactEmail
	if in.DataRequestURL != nil {
		url = *in.DataRequestURL
	}
	if in.ContactEmail != nil {
		email = *in.ContactEmail
	}
	if url != "" {
		if err := outbound.CheckURL(url, allowPrivate); err != nil {
			return PrivacyChanged{}, domain.Invalid("data_request_url", "%s", err.Error())
		}
	}
	secret, err := outbound.NewSecret()
	if err != nil {
		return PrivacyChanged{}, err
	}
	ev, err := domain.ChangePrivacySettings(&s, url, email, secret, time.Now())
	if err != nil {
		return PrivacyChanged{}, err
	}
	data, err := c.Codec.Encode(ctx, eventlog.DeterministicID("ShopPrivacySettingsChanged", in.ShopID, secret), in.ShopID, ev, time.Now(),
		eventlog.Metadata{Actor: "cli", Source: "cli"})
	if err != nil {
		return PrivacyChanged{}, err
	}
	res, err := c.Log.Append(ctx, domain.PrivacySettingsStream(in.ShopID), eventlog.Any(), data)
	if err != nil {
		return PrivacyChanged{}, fmt.Errorf("record privacy settings: %w", err)
	}
	return PrivacyChanged{ID: in.ShopID, DataRequestURL: ev.DataRequestURL, ContactEmail: ev.ContactEmail, SigningSecret: secret,
		Position: uint64(res.Position)}, nil
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

// GDPRRequest is one GDPR request of a shop with its delivery status.
type GDPRRequest struct {
	ID string `json:"id"`
	readapi.GDPRRequestAttributes
}

// GDPRRequests are the shop's GDPR requests with their delivery status, as
// the live read model keeps them (none when the server never ran this
// version).
func GDPRRequests(ctx context.Context, cfg Config, shop string) ([]GDPRRequest, error) {
	store, err := cfg.OpenReadModels()
	if err != nil {
		return nil, err
	}
	defer store.Close()
	q := gdprrequests.NewQueries(store.DB())
	built, err := q.Built(ctx)
	if err != nil {
		return nil, fmt.Errorf("read models: %w", err)
	}
	rows := []GDPRRequest{}
	if !built { // the server never ran this version
		return rows, nil
	}
	var after *gdprrequests.Key
	for {
		page, next, err := q.Requests(ctx, shop, gdprrequests.Page{After: after, Limit: 100})
		if err != nil {
			return nil, err
		}
		for i := range page {
			rows = append(rows, GDPRRequest{ID: page[i].ID,
				GDPRRequestAttributes: readapi.GDPRRequestResource(&page[i]).Attributes.(readapi.GDPRRequestAttributes)})
		}
		if next == nil {
			return rows, nil
		}
		after = next
	}
}
