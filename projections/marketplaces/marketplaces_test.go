package marketplaces_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/marketplaces"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// step is one recorded command of testdata/deliveries.json.
type step struct {
	Op          string    `json:"op"`
	Shop        string    `json:"shop"` // an alias, A or B
	Delivery    string    `json:"delivery"`
	Marketplace string    `json:"marketplace"`
	Account     string    `json:"account"`
	Secret      string    `json:"secret"`
	AppKey      string    `json:"app_key"`
	Order       string    `json:"order"`
	Kind        string    `json:"kind"`
	Status      string    `json:"status"`
	Total       string    `json:"total"`
	Currency    string    `json:"currency"`
	Resource    string    `json:"resource"`
	At          time.Time `json:"at"`
}

type fixture struct {
	cmds  *commands.Handler
	codec *envelope.Codec
	read  *testenv.ReadSide
	shops map[string]string // alias → shop id
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	core := testenv.New(t, func() time.Time { return clock })
	f := &fixture{cmds: core.Commands, codec: core.Codec, read: core.ReadSide(t, marketplaces.Projector(core.Codec)), shops: map[string]string{}}
	ctx := context.Background()
	meta := commands.Meta{Actor: "test", Source: "cli"}
	acc, err := f.cmds.CreateAccount(ctx, commands.CreateAccount{Name: "Agency", Plan: "agency"}, meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, alias := range []string{"A", "B"} {
		shop, err := f.cmds.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: strings.ToLower(alias) + ".example.com",
			Plan: "agency", WebhookSecret: "0123456789abcdef"}, meta)
		if err != nil {
			t.Fatal(err)
		}
		f.shops[alias] = shop.ID
	}
	return f
}

// play runs the steps of a file and waits for the read model to reach them.
func (f *fixture) play(t *testing.T, path string) {
	t.Helper()
	var steps []step
	testenv.ReadJSON(t, path, &steps)
	ctx := context.Background()
	meta := commands.Meta{Actor: "test", Source: "webhook"}
	var last eventlog.Position
	for _, s := range steps {
		shop := f.shops[s.Shop]
		id := eventlog.DeterministicID("marketplace", s.Marketplace, shop, s.Delivery)
		var res commands.Result
		var err error
		switch s.Op {
		case "connect":
			var c commands.MarketplaceConnection
			c, err = f.cmds.ConnectMarketplace(ctx, commands.ConnectMarketplace{ShopID: shop, Marketplace: s.Marketplace,
				AccountID: s.Account, Secret: s.Secret, AppKey: s.AppKey}, meta)
			res = c.Result
		case "order":
			u := domain.MarketplaceOrderUpdate{Marketplace: s.Marketplace, AccountID: s.Account, MarketplaceOrderID: s.Order,
				Kind: s.Kind, Status: s.Status, Currency: s.Currency, OccurredAt: s.At}
			if s.Total != "" {
				total, _ := domain.ParseAmount(s.Total)
				u.Total = &total
			}
			res, err = f.cmds.RecordMarketplaceOrder(ctx, commands.RecordMarketplaceOrder{ShopID: shop, Update: u, EventID: id}, meta)
		case "notification":
			res, err = f.cmds.RecordMarketplaceNotification(ctx, commands.RecordMarketplaceNotification{ShopID: shop, EventID: id,
				Notice: domain.MarketplaceNotice{Marketplace: s.Marketplace, AccountID: s.Account, Kind: s.Kind, ResourceID: s.Resource, OccurredAt: s.At}}, meta)
		}
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		last = max(last, res.Position)
	}
	f.read.WaitFor(t, last)
}

// snapshot reads the whole read model through Queries, with shop ids
// replaced by their aliases so the golden file is stable.
func (f *fixture) snapshot(t *testing.T) []byte {
	t.Helper()
	q := marketplaces.NewQueries(f.read.DB())
	ctx := context.Background()
	all := map[string]any{}
	for _, alias := range []string{"A", "B"} {
		conns, err := q.Connections(ctx, f.shops[alias])
		if err != nil {
			t.Fatal(err)
		}
		orders, err := q.Orders(ctx, f.shops[alias])
		if err != nil {
			t.Fatal(err)
		}
		notes, err := q.Notifications(ctx, f.shops[alias])
		if err != nil {
			t.Fatal(err)
		}
		// Order and notification ids derive from the shop id, which is
		// random: TestQueries checks them.
		for i := range orders {
			orders[i].ID = ""
		}
		for i := range notes {
			notes[i].EventID = ""
		}
		// Secrets are sealed with the shop's random key: shown opened.
		for i := range conns {
			secret, err := f.codec.OpenSecret(ctx, conns[i].ShopID, marketplaces.SecretLabel, conns[i].Secret)
			if err != nil || !strings.HasPrefix(conns[i].Secret, "sec1:") {
				t.Fatalf("sealed secret %q: %v", conns[i].Secret, err)
			}
			conns[i].Secret = secret
		}
		all[alias] = map[string]any{"connections": conns, "orders": orders, "notifications": notes}
	}
	out, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for alias, id := range f.shops {
		out = bytes.ReplaceAll(out, []byte(id), []byte("shop_"+alias))
	}
	return out
}

func TestProjectorMatchesGolden(t *testing.T) {
	f := newFixture(t)
	f.play(t, "testdata/deliveries.json")
	testenv.Golden(t, "testdata/marketplaces.golden.json", f.snapshot(t), *update)
}

func TestQueries(t *testing.T) {
	f := newFixture(t)
	f.play(t, "testdata/deliveries.json")
	q := marketplaces.NewQueries(f.read.DB())
	ctx := context.Background()
	c, err := q.Connection(ctx, "tiktok_shop", "7494")
	if err == nil {
		c.Secret, err = f.codec.OpenSecret(ctx, c.ShopID, marketplaces.SecretLabel, c.Secret)
	}
	if err != nil || c.ShopID != f.shops["A"] || c.Secret != "tiktok-secret-rotated-01" || c.AppKey != "app-2" || c.RotatedAt.IsZero() {
		t.Fatalf("rotated connection: %+v %v", c, err)
	}
	if _, err := q.Connection(ctx, "etsy", "7494"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("account of another marketplace: %v", err)
	}
	// Updates arrived paid, delivered, shipped: the latest occurred_at wins,
	// the total stays, the repeated delivery counted once.
	o, err := q.Order(ctx, f.shops["A"], "etsy", "54321")
	if err != nil || o.ID != domain.MarketplaceOrderID(f.shops["A"], "etsy", "54321") || o.Status != "delivered" || o.Updates != 3 || o.Total == nil || o.Total.String() != "25.99" || o.Currency != "USD" {
		t.Fatalf("etsy order: %+v %v", o, err)
	}
	if _, err := q.Order(ctx, f.shops["B"], "etsy", "54321"); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("order of another shop: %v", err)
	}
	notes, err := q.Notifications(ctx, f.shops["A"])
	if err != nil || len(notes) != 1 || notes[0].Kind != "4" ||
		notes[0].EventID != eventlog.DeterministicID("marketplace", "tiktok_shop", f.shops["A"], "n-2").String() {
		t.Fatalf("notifications: %+v %v", notes, err)
	}
}
