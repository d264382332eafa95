package app

// What the CLI lists of a shop's storefront access settings by folding
// the log (so it works whether or not a server runs): its CORS
// allow-list and its public keys (never a key itself).

import (
	"context"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// AllowedOriginListing is one origin of `cgp shops origins list`.
type AllowedOriginListing struct {
	Origin string `json:"origin"`
	Host   string `json:"host"`
}

// ListAllowedOrigins folds the shop's stream and returns its CORS
// allow-list in the order the origins were added.
func ListAllowedOrigins(ctx context.Context, c *Core, shop string) ([]AllowedOriginListing, error) {
	var s domain.Shop
	if err := foldStream(ctx, c, domain.ShopStream(shop), s.Apply); err != nil {
		return nil, err
	}
	if !s.Exists {
		return nil, domain.NotFound("shop")
	}
	out := []AllowedOriginListing{}
	for _, h := range s.AllowedOrigins() {
		out = append(out, AllowedOriginListing{Origin: "https://" + h, Host: h})
	}
	return out, nil
}

// PublicKeyListing is one key of `cgp public-keys list`.
type PublicKeyListing struct {
	ID          string     `json:"id"`
	Environment string     `json:"environment"`
	Status      string     `json:"status"`
	Last4       *string    `json:"last4"`
	CreatedAt   time.Time  `json:"created_at"`
	RotatedAt   *time.Time `json:"rotated_at"`
	RevokedAt   *time.Time `json:"revoked_at"`
}

// ListPublicKeys folds the shop's public-key streams from the log, oldest
// first.
func ListPublicKeys(ctx context.Context, c *Core, shop string) ([]PublicKeyListing, error) {
	keys := map[string]*domain.PublicKey{}
	var order []string
	err := foldShopStreams(ctx, c, shop, "publickey-", func(stream string, ev domain.Event) {
		k := keys[stream]
		if k == nil {
			k = &domain.PublicKey{}
			keys[stream] = k
			order = append(order, stream)
		}
		k.Apply(ev)
	})
	if err != nil {
		return nil, err
	}
	out := make([]PublicKeyListing, 0, len(order))
	for _, stream := range order {
		k := keys[stream]
		if !k.Exists {
			continue
		}
		l := PublicKeyListing{ID: k.ID, Environment: k.Environment, Status: "active", CreatedAt: k.CreatedAt}
		if k.Last4 != "" {
			l.Last4 = &k.Last4
		}
		if !k.RotatedAt.IsZero() {
			at := k.RotatedAt
			l.RotatedAt = &at
		}
		if k.Revoked {
			at := k.RevokedAt
			l.Status, l.RevokedAt = "revoked", &at
		}
		out = append(out, l)
	}
	return out, nil
}
