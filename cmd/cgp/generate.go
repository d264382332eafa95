package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// devCommands returns the CLI commands for development and benchmarks.
func devCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{group("dev", "Development and benchmark tools", newDevGenerate(cfg, stdout, stderr))}
}

// maxGenerateWorkers bounds --workers.
const maxGenerateWorkers = 1024

// maxTouchpointsPerOrder bounds --touchpoints-per-order.
const maxTouchpointsPerOrder = 100

// touchWindow is how long before its order a generated touchpoint may be:
// the default lookback window of attribution.
const touchWindow = 30 * 24 * time.Hour

// generateSpan is how far back the synthetic shop's history reaches.
const generateSpan = 2 * 365 * 24 * time.Hour

// shopGenerator records a synthetic shop through the command handler:
// customers first, then orders of those customers. Everything (profiles,
// order times, which customer places which order, event ids) derives from
// the seed and the record's index, so workers may take the records in any
// order and a second run appends nothing.
type shopGenerator struct {
	shop              string
	customers, orders int
	// touchpoints is how many checkout landings of the customer each order
	// has before it, within its 30-day lookback window.
	touchpoints int
	seed        uint64
	workers     int
	// until is the end of the history: the start of the current UTC day,
	// so a re-run on the same day records the same snapshots.
	until time.Time
}

// generateResult is what `cgp dev generate` prints.
type generateResult struct {
	Customers   int     `json:"customers"`
	Orders      int     `json:"orders"`
	Touchpoints int     `json:"touchpoints"`
	Position    uint64  `json:"position"`
	Seconds     float64 `json:"seconds"`
}

func newDevGenerate(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	g := shopGenerator{}
	cmd := &cobra.Command{Use: "generate --shop SHOP_ID --customers N --orders M",
		Short: "Record a synthetic shop (customers and their orders) through the command handler, deterministic from --seed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop"); err != nil {
				return err
			}
			if err := g.validate(); err != nil {
				return usageError{err}
			}
			g.until = time.Now().UTC().Truncate(24 * time.Hour)
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				start := time.Now()
				pos, err := g.run(cmd.Context(), c.Commands)
				if err != nil {
					return err
				}
				return printJSON(stdout, generateResult{Customers: g.customers, Orders: g.orders,
					Touchpoints: g.orders * g.touchpoints, Position: pos,
					Seconds: time.Since(start).Seconds()})
			})
		}}
	f := cmd.Flags()
	f.StringVar(&g.shop, "shop", "", "shop id (shop_…)")
	f.IntVar(&g.customers, "customers", 1000, "customers to record")
	f.IntVar(&g.orders, "orders", 5000, "orders to record (each of one of the generated customers)")
	f.IntVar(&g.touchpoints, "touchpoints-per-order", 0,
		fmt.Sprintf("checkout landings (touchpoints) recorded before each order, within its 30-day window (0 to %d)", maxTouchpointsPerOrder))
	f.Uint64Var(&g.seed, "seed", 1, "seed of the generated data")
	f.IntVar(&g.workers, "workers", 16, "concurrent commands (group commit batches their appends)")
	return cmd
}

func (g *shopGenerator) validate() error {
	switch {
	case g.customers < 0:
		return fmt.Errorf("--customers must not be negative")
	case g.orders < 0:
		return fmt.Errorf("--orders must not be negative")
	case g.orders > 0 && g.customers == 0:
		return fmt.Errorf("--orders needs at least one customer")
	case g.touchpoints < 0 || g.touchpoints > maxTouchpointsPerOrder:
		return fmt.Errorf("--touchpoints-per-order must be between 0 and %d", maxTouchpointsPerOrder)
	case g.workers < 1 || g.workers > maxGenerateWorkers:
		return fmt.Errorf("--workers must be between 1 and %d", maxGenerateWorkers)
	}
	return nil
}

// run records the customers, then the orders, and returns the highest
// position appended (or found, for records already there).
func (g *shopGenerator) run(ctx context.Context, h *commands.Handler) (uint64, error) {
	meta := commands.Meta{Actor: "cli:generate", Source: "cli"}
	var top atomic.Uint64
	keep := func(res commands.Result) {
		for {
			cur := top.Load()
			if res.Position <= cur || top.CompareAndSwap(cur, res.Position) {
				return
			}
		}
	}
	err := g.each(ctx, g.customers, func(i int) error {
		res, err := h.RecordCustomer(ctx, g.customer(i), meta)
		keep(res)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("generate customers: %w", err)
	}
	err = g.each(ctx, g.orders, func(i int) error {
		o := g.order(i)
		// The touchpoints first, so that the attribution projector has
		// them when it folds the order.
		for k := range g.touchpoints {
			res, err := h.RecordCheckout(ctx, g.touchpoint(i, k, &o), meta)
			keep(res)
			if err != nil {
				return fmt.Errorf("touchpoint %d of order %d: %w", k, i, err)
			}
		}
		res, err := h.RecordOrder(ctx, o, meta)
		keep(res)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("generate orders: %w", err)
	}
	return top.Load(), nil
}

// each calls fn(i) for i in [0, n) from g.workers goroutines and returns
// the first error (the other workers stop taking indices).
func (g *shopGenerator) each(parent context.Context, n int, fn func(i int) error) error {
	var next atomic.Int64
	var once sync.Once
	var first error
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var wg sync.WaitGroup
	for range min(g.workers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return parent.Err()
}

// rng returns the generator of record kind i, from the seed alone.
func (g *shopGenerator) rng(kind string, i int) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(kind))
	return rand.New(rand.NewPCG(g.seed, h.Sum64()^uint64(i)*0x9e3779b97f4a7c15))
}

var (
	firstNames = []string{"Ada", "Ben", "Chloé", "Dmitri", "Elif", "Farah", "Goran", "Hana", "Iker", "Jun", "Kofi", "Lena", "Mateo", "Noor", "Olga", "Priya"}
	lastNames  = []string{"Abe", "Bauer", "Costa", "Dubois", "Eriksen", "Fischer", "García", "Haddad", "Ivanova", "Jensen", "Kim", "Lopez", "Moreau", "Nakamura", "Okafor", "Petrov"}
)

// customerExternal is the platform id of generated customer i.
func customerExternal(i int) string { return "gen-c" + strconv.Itoa(i) }

// customerWindow is when generated customer i joined and when it last
// shops: a third stay active to the end, the others stop at some point,
// so the lifecycle stages vary.
func (g *shopGenerator) customerWindow(i int) (joined, last time.Time) {
	r := g.rng("window", i)
	from := g.until.Add(-generateSpan)
	joined = from.Add(time.Duration(r.Int64N(int64(generateSpan))))
	last = g.until
	if r.IntN(3) > 0 {
		last = joined.Add(time.Duration(r.Int64N(int64(g.until.Sub(joined)) + 1)))
	}
	return joined, last
}

func (g *shopGenerator) customer(i int) commands.RecordCustomer {
	r := g.rng("customer", i)
	ext := customerExternal(i)
	first, last := firstNames[r.IntN(len(firstNames))], lastNames[r.IntN(len(lastNames))]
	email := fmt.Sprintf("customer%d@shop.example.test", i)
	joined, _ := g.customerWindow(i)
	return commands.RecordCustomer{
		ShopID: g.shop,
		Profile: domain.CustomerProfile{
			ExternalID: ext, Email: &email, FirstName: &first, LastName: &last,
			AcceptsMarketing: r.IntN(2) == 0, State: "enabled", Currency: "USD",
			PlatformCreated: joined, PlatformUpdated: joined,
		},
		EventID: eventlog.DeterministicID("generate", g.shop, "customer", ext),
	}
}

func (g *shopGenerator) order(i int) commands.RecordOrder {
	r := g.rng("order", i)
	c := r.IntN(g.customers)
	joined, last := g.customerWindow(c)
	at := joined.Add(time.Duration(r.Int64N(int64(last.Sub(joined)) + 1)))
	ext := "gen-o" + strconv.Itoa(i)
	qty := 1 + r.IntN(3)
	price := domain.Amount((5 + r.Int64N(195)) * domain.AmountScale)
	total := price * domain.Amount(qty)
	return commands.RecordOrder{
		Delivered: commands.Delivered{ShopID: g.shop, Topic: "orders/create", LikelyNew: true,
			EventID: eventlog.DeterministicID("generate", g.shop, "order", ext)},
		CustomerExternalID: customerExternal(c),
		Snapshot: domain.OrderSnapshot{
			ExternalID: ext, Name: "#G" + strconv.Itoa(i), FinancialStatus: "paid", FulfillmentStatus: "fulfilled",
			Currency: "USD", TotalPrice: total, SubtotalPrice: total,
			Lines:     []domain.OrderLine{{LineID: ext + "-1", SKU: "SKU-" + strconv.Itoa(r.IntN(500)), Title: "Generated product", Quantity: qty, Price: price}},
			CreatedAt: at, UpdatedAt: at, ProcessedAt: at,
		},
	}
}

// Landing data of generated touchpoints.
var (
	paidSearchCampaigns = []string{"brand", "generic-shoes", "generic-bags", "shopping-all", "competitor", "dsa"}
	socialCampaigns     = []string{"prospecting", "retargeting", "lookalike", "ugc-video", "catalog"}
	emailCampaigns      = []string{"weekly-digest", "welcome-series", "back-in-stock", "abandoned-cart", "vip-early-access"}
	searchEngines       = []string{"https://www.google.com/", "https://www.bing.com/", "https://duckduckgo.com/", "https://search.yahoo.com/"}
	referrers           = []string{"https://blog.example.org/review", "https://forum.example.net/t/42", "https://news.example.com/gift-guide"}
	landingPaths        = []string{"/", "/products/p1", "/products/p2", "/collections/new", "/collections/sale", "/pages/about"}
)

// touchpoint is generated landing k of order i (o): a checkout snapshot of
// the order's customer within the 30 days before the order, on a channel
// from a fixed mix (paid search with gclid, paid social with fbclid,
// e-mail and SMS by UTM, organic search and referral by referrer, direct).
func (g *shopGenerator) touchpoint(i, k int, o *commands.RecordOrder) commands.RecordCheckout {
	r := g.rng("touchpoint", i*maxTouchpointsPerOrder+k)
	at := o.Snapshot.CreatedAt.Add(-time.Minute - time.Duration(r.Int64N(int64(touchWindow-time.Minute))))
	ext := "gen-k" + strconv.Itoa(i) + "-" + strconv.Itoa(k)
	a := domain.Attribution{LandingSite: landingPaths[r.IntN(len(landingPaths))]}
	clickID := strconv.FormatUint(r.Uint64(), 36)
	switch p := r.IntN(100); {
	case p < 25:
		a.ClickIDs = map[string]string{"gclid": clickID}
		a.UTM = map[string]string{"source": "google", "medium": "cpc", "campaign": paidSearchCampaigns[r.IntN(len(paidSearchCampaigns))]}
	case p < 45:
		a.ClickIDs = map[string]string{"fbclid": clickID}
		a.UTM = map[string]string{"source": "facebook", "medium": "paid_social", "campaign": socialCampaigns[r.IntN(len(socialCampaigns))]}
	case p < 60:
		a.UTM = map[string]string{"source": "newsletter", "medium": "email", "campaign": emailCampaigns[r.IntN(len(emailCampaigns))]}
	case p < 75:
		a.ReferringSite = searchEngines[r.IntN(len(searchEngines))]
	case p < 82:
		a.ReferringSite = referrers[r.IntN(len(referrers))]
	case p < 87:
		a.UTM = map[string]string{"source": "sms", "medium": "sms", "campaign": emailCampaigns[r.IntN(len(emailCampaigns))]}
	default: // direct: a landing without source
	}
	return commands.RecordCheckout{
		Delivered: commands.Delivered{ShopID: g.shop, Topic: "checkouts/create", LikelyNew: true,
			EventID: eventlog.DeterministicID("generate", g.shop, "checkout", ext)},
		CustomerExternalID: o.CustomerExternalID,
		Snapshot: domain.CheckoutSnapshot{ExternalID: ext, Currency: "USD", TotalPrice: o.Snapshot.TotalPrice,
			CreatedAt: at, UpdatedAt: at, Attribution: a},
	}
}
