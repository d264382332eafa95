package webhooksubs_test

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
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/webhooksubs"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// step is one recorded command of testdata/steps.json.
type step struct {
	Op          string    `json:"op"`
	Shop        string    `json:"shop"` // an alias: A, B or C
	Sub         string    `json:"sub"`  // an alias of the subscription
	URL         string    `json:"url"`
	EventTypes  []string  `json:"event_types"`
	Description *string   `json:"description"`
	Enabled     *bool     `json:"enabled"`
	Level       int       `json:"level"`
	Since       time.Time `json:"since"`
	DisableAt   time.Time `json:"disable_at"`
	Reason      string    `json:"reason"`
	Status      int       `json:"status"`
	Overlap     string    `json:"overlap"`
	At          time.Time `json:"at"`
}

type fixture struct {
	cmds  *commands.Handler
	read  *testenv.ReadSide
	clock time.Time
	shops map[string]string // alias → shop id
	subs  map[string]string // alias → subscription id
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{clock: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), shops: map[string]string{}, subs: map[string]string{}}
	core := testenv.New(t, func() time.Time { return f.clock })
	f.cmds, f.read = core.Commands, core.ReadSide(t, webhooksubs.Projector(core.Codec))
	ctx := context.Background()
	acc, err := f.cmds.CreateAccount(ctx, commands.CreateAccount{Name: "Agency", Plan: "agency"}, meta())
	if err != nil {
		t.Fatal(err)
	}
	for _, alias := range []string{"A", "B", "C"} {
		shop, err := f.cmds.CreateShop(ctx, commands.CreateShop{AccountID: acc.ID, Domain: strings.ToLower(alias) + ".example.com",
			Plan: "agency", WebhookSecret: "0123456789abcdef"}, meta())
		if err != nil {
			t.Fatal(err)
		}
		f.shops[alias] = shop.ID
	}
	return f
}

func meta() commands.Meta { return commands.Meta{Actor: "test", Source: "cli"} }

// play runs the steps of a file (each at its time, or the last one's) and
// waits for the read model to reach them.
func (f *fixture) play(t *testing.T, path string) {
	t.Helper()
	var steps []step
	testenv.ReadJSON(t, path, &steps)
	ctx := context.Background()
	var last eventlog.Position
	for _, s := range steps {
		if !s.At.IsZero() {
			f.clock = s.At
		}
		shop, sub := f.shops[s.Shop], f.subs[s.Sub]
		var res commands.Result
		var err error
		switch s.Op {
		case "create":
			var created commands.WebhookSubscriptionSecret
			desc := ""
			if s.Description != nil {
				desc = *s.Description
			}
			created, err = f.cmds.CreateWebhookSubscription(ctx, commands.CreateWebhookSubscription{ShopID: shop, URL: s.URL,
				EventTypes: s.EventTypes, Description: desc}, meta())
			res, f.subs[s.Sub] = created.Result, created.ID
		case "update", "patch-enabled":
			p := domain.WebhookPatch{EventTypes: s.EventTypes, Description: s.Description, Enabled: s.Enabled}
			if s.URL != "" {
				p.URL = &s.URL
			}
			res, err = f.cmds.UpdateWebhookSubscription(ctx, commands.UpdateWebhookSubscription{ShopID: shop, SubscriptionID: sub, Patch: p}, meta())
		case "warn":
			res, err = f.cmds.WarnWebhookSubscription(ctx, commands.WarnWebhookSubscription{ShopID: shop, SubscriptionID: sub,
				Level: s.Level, FailingSince: s.Since, DisableAt: s.DisableAt, LastReason: "HTTP 500"}, meta())
		case "disable":
			res, err = f.cmds.DisableWebhookSubscription(ctx, commands.DisableWebhookSubscription{ShopID: shop, SubscriptionID: sub,
				Reason: s.Reason, Status: s.Status}, meta())
		case "rotate":
			var overlap time.Duration
			if overlap, err = time.ParseDuration(s.Overlap); err == nil {
				var rotated commands.WebhookSubscriptionSecret
				rotated, err = f.cmds.RotateWebhookSecret(ctx, commands.RotateWebhookSecret{ShopID: shop, SubscriptionID: sub, Overlap: &overlap}, meta())
				res = rotated.Result
			}
		case "delete":
			res, err = f.cmds.DeleteWebhookSubscription(ctx, commands.DeleteWebhookSubscription{ShopID: shop, SubscriptionID: sub}, meta())
		case "erase":
			res, err = f.cmds.EraseShop(ctx, commands.EraseShop{ShopID: shop, Reason: domain.ShopErasedRedact}, meta())
		default:
			t.Fatalf("unknown op %q", s.Op)
		}
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		last = max(last, res.Position)
	}
	f.read.WaitFor(t, last)
}

// snapshot reads every shop's subscriptions through Queries (two to a
// page, to walk the cursor), ids replaced by their aliases so that the
// golden file is stable.
func (f *fixture) snapshot(t *testing.T) []byte {
	t.Helper()
	q := webhooksubs.NewQueries(f.read.DB())
	all := map[string][]webhooksubs.Subscription{}
	for alias, shop := range f.shops {
		var after *webhooksubs.Key
		all[alias] = []webhooksubs.Subscription{}
		for {
			page, next, err := q.Subscriptions(context.Background(), webhooksubs.ListQuery{Shop: shop, Desc: true, After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			all[alias] = append(all[alias], page...)
			if next == nil {
				break
			}
			after = next
		}
	}
	out, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for alias, id := range f.shops {
		out = bytes.ReplaceAll(out, []byte(id), []byte("shop_"+alias))
	}
	for alias, id := range f.subs {
		out = bytes.ReplaceAll(out, []byte(id), []byte("whs_"+alias))
	}
	return out
}

func TestProjectorMatchesGolden(t *testing.T) {
	f := newFixture(t)
	f.play(t, "testdata/steps.json")
	testenv.Golden(t, "testdata/webhook_subscriptions.golden.json", f.snapshot(t), *update)
}

// TestQueries: one subscription is found only with its own shop; a
// deleted one is not found; the list is newest first, and oldest first
// when asked.
func TestQueries(t *testing.T) {
	f := newFixture(t)
	f.play(t, "testdata/steps.json")
	q := webhooksubs.NewQueries(f.read.DB())
	ctx := context.Background()
	s, err := q.Subscription(ctx, f.shops["A"], f.subs["a1"])
	if err != nil || s.URL != "https://hooks.a.example.com/orders/v2" || strings.Join(s.EventTypes, ",") != "order.paid,order.refunded" ||
		s.FailingLevel != 0 || !s.FailingSince.IsZero() || s.PreviousSecretValidUntil.Sub(s.SecretRotatedAt) != 24*time.Hour {
		t.Fatalf("a1: %+v %v", s, err)
	}
	for _, c := range []struct{ shop, sub string }{{"B", "a1"}, {"B", "b2"}, {"C", "c1"}} {
		if _, err := q.Subscription(ctx, f.shops[c.shop], f.subs[c.sub]); domain.ErrorCode(err) != domain.CodeNotFound {
			t.Errorf("%s of shop %s: %v, want not found", c.sub, c.shop, err)
		}
	}
	for _, desc := range []bool{true, false} {
		rows, next, err := q.Subscriptions(ctx, webhooksubs.ListQuery{Shop: f.shops["A"], Desc: desc, Limit: 10})
		if err != nil || next != nil || len(rows) != 3 {
			t.Fatalf("list: %v %v %v", rows, next, err)
		}
		first, last := f.subs["a3"], f.subs["a1"]
		if !desc {
			first, last = last, first
		}
		if rows[0].ID != first || rows[2].ID != last {
			t.Errorf("desc %v: %s … %s", desc, rows[0].ID, rows[2].ID)
		}
	}
	if built, err := q.Built(ctx); !built || err != nil {
		t.Fatalf("built: %v %v", built, err)
	}
}

// TestTheReadModelHoldsNoSecret: the secrets of the creations and
// rotations are in no column of the table.
func TestTheReadModelHoldsNoSecret(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	created, err := f.cmds.CreateWebhookSubscription(ctx, commands.CreateWebhookSubscription{ShopID: f.shops["A"],
		URL: "https://hooks.example.com/x", EventTypes: []string{"order.created"}}, meta())
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := f.cmds.RotateWebhookSecret(ctx, commands.RotateWebhookSecret{ShopID: f.shops["A"], SubscriptionID: created.ID}, meta())
	if err != nil {
		t.Fatal(err)
	}
	f.read.WaitFor(t, rotated.Position)
	dump, err := json.Marshal(testenv.Dump(t, f.read.DB(), "webhook_subscriptions", "position"))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{created.Secret, rotated.Secret} {
		if !strings.HasPrefix(secret, "whsec_") || bytes.Contains(dump, []byte(secret)) {
			t.Fatalf("secret %q in the read model: %s", secret, dump)
		}
	}
}
