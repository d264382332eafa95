package app

// What the CLI lists by folding the log (so it works whether or not a
// server runs): accounts, shops and tokens.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/lastuse"
)

// ErrUnknownShop is the failure of every CLI command given a --shop that
// names no shop of the data directory (exit 1).
var ErrUnknownShop = errors.New("shop not found")

// CheckShopExists reports ErrUnknownShop, with a hint, when no shop stream
// of the log holds shop.
func CheckShopExists(ctx context.Context, c *Core, shop string) error {
	evs, err := c.Log.ReadStream(ctx, domain.ShopStream(shop), 0, 1)
	if err != nil {
		return fmt.Errorf("read shop %s: %w", shop, err)
	}
	if len(evs) > 0 {
		return nil
	}
	hint := `"cgp shops list" lists the shops of this data directory`
	if !strings.HasPrefix(shop, "shop_") {
		hint = "--shop takes a shop id (shop_…), not a domain; " + hint
		// A domain that a shop claimed: name that shop's id.
		claims, err := c.Log.ReadStream(ctx, domain.ShopDomainStream(shop), 0, 1)
		if err == nil && len(claims) > 0 && claims[0].ShopID != "" {
			hint = fmt.Sprintf("--shop takes a shop id, not a domain: %s is --shop %s", domain.NormalizeDomain(shop), claims[0].ShopID)
		}
	}
	return fmt.Errorf("%w: %q in %s (%s)", ErrUnknownShop, shop, c.Config.DataDir, hint)
}

// ShopListing is one shop of `cgp shops list` (never its secrets).
type ShopListing struct {
	ID          string     `json:"id"`
	AccountID   string     `json:"account_id"`
	Domain      string     `json:"domain"`
	Plan        string     `json:"plan"`
	CreatedAt   time.Time  `json:"created_at"`
	Uninstalled bool       `json:"uninstalled"`
	Erased      bool       `json:"erased"`
	ErasedAt    *time.Time `json:"erased_at,omitempty"`
}

// AccountListing is one account of `cgp accounts list`.
type AccountListing struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Plan      string    `json:"plan"`
	CreatedAt time.Time `json:"created_at"`
}

// ListTenancy folds the accounts and shops from the log, in creation
// order, so it works whether or not a server runs. An erased shop is
// listed with its id and erased: true (its sealed details are gone).
func ListTenancy(ctx context.Context, c *Core) ([]AccountListing, []ShopListing, error) {
	accounts := []AccountListing{}
	var shopOrder []string
	shops := map[string]*domain.Shop{}
	created := map[string]time.Time{}
	erasedAt := map[string]time.Time{}
	var after eventlog.Position
	for {
		evs, err := c.Log.ReadAll(ctx, after, 1000)
		if err != nil {
			return nil, nil, fmt.Errorf("read log: %w", err)
		}
		for i := range evs {
			e := &evs[i]
			after = e.Position
			isShop := strings.HasPrefix(e.StreamID, "shop-")
			if !isShop && !strings.HasPrefix(e.StreamID, "account-") {
				continue
			}
			id := strings.TrimPrefix(strings.TrimPrefix(e.StreamID, "shop-"), "account-")
			if isShop && shops[id] == nil {
				shops[id] = &domain.Shop{ID: id}
				shopOrder = append(shopOrder, id)
				created[id] = e.RecordedAt
			}
			d, err := c.Codec.Decode(ctx, e)
			if errors.Is(err, envelope.ErrShopErased) {
				if isShop {
					shops[id].Erased = true
					erasedAt[id] = e.RecordedAt
				}
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			if ev, ok := d.Event.(*domain.AccountCreated); ok {
				accounts = append(accounts, AccountListing{ID: ev.AccountID, Name: ev.Name, Plan: string(ev.Plan), CreatedAt: ev.CreatedAt})
			}
			if isShop {
				shops[id].Apply(d.Event)
				if ev, ok := d.Event.(*domain.ShopCreated); ok {
					created[id] = ev.CreatedAt
				}
				if _, ok := d.Event.(*domain.ShopErased); ok {
					erasedAt[id] = e.RecordedAt
				}
			}
		}
		if len(evs) < 1000 {
			break
		}
	}
	out := make([]ShopListing, 0, len(shopOrder))
	for _, id := range shopOrder {
		s := shops[id]
		l := ShopListing{ID: id, AccountID: s.AccountID, Domain: s.Domain, Plan: string(s.Plan), CreatedAt: created[id],
			Uninstalled: s.Uninstalled, Erased: s.Erased}
		if at, ok := erasedAt[id]; ok && s.Erased {
			l.ErasedAt = &at
		}
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return accounts, out, nil
}

// TokenListing is one token of `cgp tokens list`.
type TokenListing struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Scopes      []domain.Scope `json:"scopes"`
	Environment string         `json:"environment"`
	CreatedAt   time.Time      `json:"created_at"`
	RotatedAt   *time.Time     `json:"rotated_at"`
	RevokedAt   *time.Time     `json:"revoked_at"`
	LastUsedAt  *time.Time     `json:"last_used_at"`
	LastUsedIP  *string        `json:"last_used_ip"`
}

// ListTokens folds the shop's token events from the log (so it works
// whether or not a server runs) and adds the last uses the server saved.
func ListTokens(ctx context.Context, c *Core, shop string) ([]TokenListing, error) {
	byID := map[string]*TokenListing{}
	var order []string
	err := foldShopStreams(ctx, c, shop, "token-", func(_ string, ev domain.Event) {
		switch ev := ev.(type) {
		case *domain.TokenIssued:
			byID[ev.TokenID] = &TokenListing{ID: ev.TokenID, Name: ev.Name, Scopes: ev.Scopes, Environment: ev.Environment, CreatedAt: ev.CreatedAt}
			order = append(order, ev.TokenID)
		case *domain.TokenRotated:
			if t := byID[ev.TokenID]; t != nil {
				at := ev.RotatedAt
				t.RotatedAt = &at
			}
		case *domain.TokenRevoked:
			if t := byID[ev.TokenID]; t != nil {
				at := ev.RevokedAt
				t.RevokedAt = &at
			}
		}
	})
	if err != nil {
		return nil, err
	}
	uses, err := lastuse.Open(c.Config.Path("lastuse.db"))
	if err != nil {
		return nil, err
	}
	defer uses.Close()
	out := make([]TokenListing, 0, len(order))
	for _, id := range order {
		t := byID[id]
		u, ok, err := uses.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			at, ip := u.At, u.IP.String()
			t.LastUsedAt, t.LastUsedIP = &at, &ip
		}
		out = append(out, *t)
	}
	return out, nil
}

// foldShopStreams reads the whole log and hands apply every decoded event
// of shop whose stream starts with prefix, in log order: the CLI's
// listings fold credentials from the log, so they work whether or not a
// server (and its read models) runs.
func foldShopStreams(ctx context.Context, c *Core, shop, prefix string, apply func(stream string, ev domain.Event)) error {
	var after eventlog.Position
	for {
		evs, err := c.Log.ReadAll(ctx, after, 1000)
		if err != nil {
			return fmt.Errorf("read log: %w", err)
		}
		for i := range evs {
			e := &evs[i]
			after = e.Position
			if e.ShopID != shop || !strings.HasPrefix(e.StreamID, prefix) {
				continue
			}
			d, err := c.Codec.Decode(ctx, e)
			if err != nil {
				return err
			}
			apply(e.StreamID, d.Event)
		}
		if len(evs) < 1000 {
			return nil
		}
	}
}
