package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
)

// errUnknownShop is the failure of every command given a --shop that names
// no shop of the data directory (exit 1).
var errUnknownShop = errors.New("shop not found")

// requireKnownShops makes every command of the tree that takes --shop
// check, before it runs, that the shop exists: one check for all of them
// (and for commands added later), so no command answers an unknown shop
// with an empty or "intact" result.
func requireKnownShops(cmd *cobra.Command, cfg *Config) {
	for _, sub := range cmd.Commands() {
		requireKnownShops(sub, cfg)
	}
	if cmd.Flags().Lookup("shop") == nil || cmd.RunE == nil {
		return
	}
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if shop, _ := cmd.Flags().GetString("shop"); shop != "" {
			if err := checkShopExists(cmd.Context(), cfg, shop); err != nil {
				return err
			}
		}
		return run(cmd, args)
	}
}

// checkShopExists reports errUnknownShop, with a hint, when no shop
// stream of the configured log holds shop.
func checkShopExists(ctx context.Context, cfg *Config, shop string) error {
	return withCore(ctx, cfg, io.Discard, func(c *Core) error {
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
		return fmt.Errorf("%w: %q in %s (%s)", errUnknownShop, shop, cfg.DataDir, hint)
	})
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

func newShopsList(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var account string
	cmd := &cobra.Command{Use: "list", Short: "List the shops of the data directory (ids, domains, plans; never secrets)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				_, shops, err := ListTenancy(cmd.Context(), c)
				if err != nil {
					return err
				}
				if account != "" {
					kept := shops[:0]
					for _, s := range shops {
						if s.AccountID == account {
							kept = append(kept, s)
						}
					}
					shops = kept
				}
				return printJSON(stdout, map[string]any{"shops": shops})
			})
		}}
	cmd.Flags().StringVar(&account, "account", "", "only the shops of this account (acc_…)")
	return cmd
}

func newAccountsList(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "List the accounts of the data directory", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				accounts, _, err := ListTenancy(cmd.Context(), c)
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"accounts": accounts})
			})
		}}
	return cmd
}
