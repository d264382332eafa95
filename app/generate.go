package app

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
)

// MaxGenerateWorkers bounds --workers.
const MaxGenerateWorkers = 1024

// MaxTouchpointsPerOrder bounds --touchpoints-per-order.
const MaxTouchpointsPerOrder = 100

// touchWindow is how long before its order a generated touchpoint may be:
// the default lookback window of attribution.
const touchWindow = 30 * 24 * time.Hour

// generateSpan is how far back the synthetic shop's history reaches.
const generateSpan = 2 * 365 * 24 * time.Hour

// ShopGenerator records a synthetic shop through the command handler:
// customers first, then orders of those customers. Everything (profiles,
// order times, which customer places which order, event ids) derives from
// the seed and the record's index, so workers may take the records in any
// order and a second run appends nothing.
type ShopGenerator struct {
	Shop              string
	Customers, Orders int
	// touchpoints is how many checkout landings of the customer each order
	// has before it, within its 30-day lookback window.
	Touchpoints int
	Seed        uint64
	Workers     int
	// Phones gives every customer a phone number (+1 555 and the
	// customer's index); WhatsAppOptIn also records, for every customer
	// who accepts marketing, an opt-in to WhatsApp marketing (an API
	// decision): the audiences of WhatsApp campaigns (bench/sending).
	Phones, WhatsAppOptIn bool
	// until is the end of the history: the start of the current UTC day,
	// so a re-run on the same day records the same snapshots.
	Until time.Time
}

// Validate checks the generator's settings (the CLI flags).
func (g *ShopGenerator) Validate() error {
	switch {
	case g.Customers < 0:
		return fmt.Errorf("--customers must not be negative")
	case g.Orders < 0:
		return fmt.Errorf("--orders must not be negative")
	case g.Orders > 0 && g.Customers == 0:
		return fmt.Errorf("--orders needs at least one customer")
	case g.Touchpoints < 0 || g.Touchpoints > MaxTouchpointsPerOrder:
		return fmt.Errorf("--touchpoints-per-order must be between 0 and %d", MaxTouchpointsPerOrder)
	case g.Workers < 1 || g.Workers > MaxGenerateWorkers:
		return fmt.Errorf("--workers must be between 1 and %d", MaxGenerateWorkers)
	}
	return nil
}

// Run records the customers, then the orders, and returns the highest
// position appended (or found, for records already there).
func (g *ShopGenerator) Run(ctx context.Context, h *commands.Handler) (uint64, error) {
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
	err := g.each(ctx, g.Customers, func(i int) error {
		c := g.customer(i)
		res, err := h.RecordCustomer(ctx, c, meta)
		keep(res)
		if err != nil || !g.WhatsAppOptIn || !c.Profile.AcceptsMarketing {
			return err
		}
		res, err = h.RecordConsent(ctx, commands.RecordConsent{Decision: domain.ConsentDecision{ShopID: g.Shop,
			CustomerID: domain.CustomerIDFromExternal(g.Shop, c.Profile.ExternalID), Channel: domain.ChannelWhatsApp,
			State: domain.ConsentSubscribed, Source: domain.ConsentSourceAPI}, SourceEventID: "generate-" + c.Profile.ExternalID}, meta)
		keep(res)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("generate customers: %w", err)
	}
	err = g.each(ctx, g.Orders, func(i int) error {
		o := g.order(i)
		// The touchpoints first, so that the attribution projector has
		// them when it folds the order.
		for k := range g.Touchpoints {
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

// each calls fn(i) for i in [0, n) from g.Workers goroutines and returns
// the first error (the other workers stop taking indices).
func (g *ShopGenerator) each(parent context.Context, n int, fn func(i int) error) error {
	var next atomic.Int64
	var once sync.Once
	var first error
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var wg sync.WaitGroup
	for range min(g.Workers, max(n, 1)) {
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
func (g *ShopGenerator) rng(kind string, i int) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(kind))
	return rand.New(rand.NewPCG(g.Seed, h.Sum64()^uint64(i)*0x9e3779b97f4a7c15))
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
func (g *ShopGenerator) customerWindow(i int) (joined, last time.Time) {
	r := g.rng("window", i)
	from := g.Until.Add(-generateSpan)
	joined = from.Add(time.Duration(r.Int64N(int64(generateSpan))))
	last = g.Until
	if r.IntN(3) > 0 {
		last = joined.Add(time.Duration(r.Int64N(int64(g.Until.Sub(joined)) + 1)))
	}
	return joined, last
}

func (g *ShopGenerator) customer(i int) commands.RecordCustomer {
	r := g.rng("customer", i)
	ext := customerExternal(i)
	first, last := firstNames[r.IntN(len(firstNames))], lastNames[r.IntN(len(lastNames))]
	email := fmt.Sprintf("customer%d@shop.example.test", i)
	joined, _ := g.customerWindow(i)
	var phone *string
	if g.Phones || g.WhatsAppOptIn {
		p := fmt.Sprintf("+1555%07d", i)
		phone = &p
	}
	return commands.RecordCustomer{
		ShopID: g.Shop,
		Profile: domain.CustomerProfile{
			ExternalID: ext, Email: &email, FirstName: &first, LastName: &last, Phone: phone,
			AcceptsMarketing: r.IntN(2) == 0, State: "enabled", Currency: "USD",
			PlatformCreated: joined, PlatformUpdated: joined,
		},
		EventID: eventlog.DeterministicID("generate", g.Shop, "customer", ext),
	}
}

func (g *ShopGenerator) order(i int) commands.RecordOrder {
	r := g.rng("order", i)
	c := r.IntN(g.Customers)
	joined, last := g.customerWindow(c)
	at := joined.Add(time.Duration(r.Int64N(int64(last.Sub(joined)) + 1)))
	ext := "gen-o" + strconv.Itoa(i)
	qty := 1 + r.IntN(3)
	price := domain.Amount((5 + r.Int64N(195)) * domain.AmountScale)
	total := price * domain.Amount(qty)
	return commands.RecordOrder{
		Delivered: commands.Delivered{ShopID: g.Shop, Topic: "orders/create", LikelyNew: true,
			EventID: eventlog.DeterministicID("generate", g.Shop, "order", ext)},
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
func (g *ShopGenerator) touchpoint(i, k int, o *commands.RecordOrder) commands.RecordCheckout {
	r := g.rng("touchpoint", i*MaxTouchpointsPerOrder+k)
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
		Delivered: commands.Delivered{ShopID: g.Shop, Topic: "checkouts/create", LikelyNew: true,
			EventID: eventlog.DeterministicID("generate", g.Shop, "checkout", ext)},
		CustomerExternalID: o.CustomerExternalID,
		Snapshot: domain.CheckoutSnapshot{ExternalID: ext, Currency: "USD", TotalPrice: o.Snapshot.TotalPrice,
			CreatedAt: at, UpdatedAt: at, Attribution: a},
	}
}
