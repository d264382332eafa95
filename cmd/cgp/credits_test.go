package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestAICreditsInUsageAndCLI drives the AI credits ledger as the image
// operations will (reserve, consume, release through the command handler
// on the server's own log) and reads the result over HTTP in GET
// /api/v1/usage, with the operator's budget override set and dropped by
// `cgp shops credits`.
func TestAICreditsInUsageAndCLI(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	v := openapitest.NewValidator(t)
	a := newTenant(t, dir, "credits.example.com", "agency", "customers:read")
	key := cli(t, dir, "image-keys", "mint", "--shop", a.shopID)["token"].(string)

	set := cli(t, dir, "shops", "credits", "--shop", a.shopID, "--monthly", "10")
	if set["budget"] != 10.0 || set["monthly_override"] != 10.0 || set["used"] != 0.0 || set["remaining"] != 10.0 || set["changed"] != true {
		t.Fatalf("shops credits --monthly 10: %v", set)
	}
	month := time.Now().UTC().Format("2006-01")
	resets := domain.CreditsResetAt(time.Now()).Format(time.RFC3339)
	if set["month"] != month || set["resets_at"] != resets {
		t.Fatalf("month %v resets_at %v", set["month"], set["resets_at"])
	}

	core, err := OpenCore(context.Background(), testConfig(dir), newLogger(&Config{LogLevel: "error"}, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close()
	ctx := context.Background()
	for _, op := range []struct {
		id, kind string
		credits  int
	}{{"img_1", domain.CreditKindBackgroundRemoval, 3}, {"img_2", domain.CreditKindUpscale, 3}, {"img_3", domain.CreditKindLifestyleScene, 2}} {
		if _, _, err := core.Commands.ReserveCredits(ctx, commands.ReserveCredits{ShopID: a.shopID, OperationID: op.id, Kind: op.kind, Credits: op.credits}, testMeta()); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := core.Commands.ReserveCredits(ctx, commands.ReserveCredits{ShopID: a.shopID, OperationID: "img_4", Kind: domain.CreditKindUpscale, Credits: 3}, testMeta()); domain.ErrorCode(err) != domain.CodeCreditsExhausted {
		t.Fatalf("a reservation beyond the budget: %v", err)
	}
	if _, _, err := core.Commands.ConsumeCredits(ctx, commands.ConsumeCredits{ShopID: a.shopID, Month: month, OperationID: "img_1"}, testMeta()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := core.Commands.ReleaseCredits(ctx, commands.ReleaseCredits{ShopID: a.shopID, Month: month, OperationID: "img_2", Reason: "engine failed"}, testMeta()); err != nil {
		t.Fatal(err)
	}

	credits := func() (map[string]any, map[string]any) {
		t.Helper()
		r := s.get(t, "/api/v1/usage", "", "X-API-Key", key)
		v.ValidateResponse(t, r.req, r.resp, r.body)
		if r.status != 200 {
			t.Fatalf("usage: %d %s", r.status, r.body)
		}
		attrs := r.json(t)["data"].(map[string]any)["attributes"].(map[string]any)
		return attrs["ai_credits"].(map[string]any), attrs["image_operations"].(map[string]any)
	}
	var ai, ops map[string]any
	eventually(t, 2*minEventually, "the month's credits in the usage", func() bool {
		ai, ops = credits()
		return ai["used"] == 3.0 && ai["reserved"] == 2.0
	})
	if ai["quota"] != 10.0 || ai["remaining"] != 5.0 || ai["resets_at"] != resets {
		t.Fatalf("ai_credits %v", ai)
	}
	if ops["background_removals"] != 1.0 || ops["upscales"] != 0.0 || ops["lifestyle_scenes"] != 0.0 || ops["total"] != 1.0 {
		t.Fatalf("image_operations %v", ops)
	}

	// Back to the agency plan's 5,000.
	def := cli(t, dir, "shops", "credits", "--shop", a.shopID, "--plan-default")
	if def["budget"] != 5000.0 || def["monthly_override"] != nil || def["used"] != 3.0 || def["reserved"] != 2.0 || def["remaining"] != 4995.0 {
		t.Fatalf("shops credits --plan-default: %v", def)
	}
	eventually(t, 2*minEventually, "the plan's budget in the usage", func() bool {
		ai, _ = credits()
		return ai["quota"] == 5000.0
	})
	if ai["remaining"] != 4995.0 {
		t.Fatalf("ai_credits %v", ai)
	}

	// Exactly one of --monthly and --plan-default; a negative budget is
	// refused.
	for _, args := range [][]string{
		{"shops", "credits", "--shop", a.shopID},
		{"shops", "credits", "--shop", a.shopID, "--monthly", "5", "--plan-default"},
		{"shops", "credits", "--shop", a.shopID, "--monthly", "-1"},
		{"shops", "credits", "--shop", "shop_missing", "--monthly", "5"},
	} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), append(args, "--data-dir", dir), &out, &errb); code == 0 {
			t.Fatalf("cgp %v: exit 0: %s", args, out.String())
		}
	}
}

// chargeCredits reserves and consumes one credit of shop through the
// command handler on the data directory's log (as an image operation
// will).
func chargeCredits(t *testing.T, dir, shop string) {
	t.Helper()
	core, err := OpenCore(context.Background(), testConfig(dir), newLogger(&Config{LogLevel: "error"}, &syncBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close()
	ctx := context.Background()
	if _, _, err := core.Commands.ReserveCredits(ctx, commands.ReserveCredits{ShopID: shop, OperationID: "img_charge", Kind: domain.CreditKindUpscale, Credits: 1}, testMeta()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := core.Commands.ConsumeCredits(ctx, commands.ConsumeCredits{ShopID: shop, Month: domain.CreditMonth(time.Now()), OperationID: "img_charge"}, testMeta()); err != nil {
		t.Fatal(err)
	}
}
