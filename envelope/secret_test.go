package envelope_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
)

// TestSealSecret: a read-model secret is sealed with the shop key
// (deterministically, so a replay gives the same column), opens only for
// its shop and label, passes through when it is in clear (a read model
// built before sealing), and no longer opens once the shop is erased.
func TestSealSecret(t *testing.T) {
	c, v := newCodec(t)
	ctx := context.Background()
	for _, shop := range []string{"shop_1", "shop_2"} { // creates the shop keys
		if _, err := c.Encode(ctx, uuid.New(), shop, customerCreated(), time.Now(), eventlog.Metadata{}); err != nil {
			t.Fatal(err)
		}
	}
	const secret = "whsec_the-secret-0123456789"
	sealed, err := c.SealSecret(ctx, "shop_1", "shops.webhook_secret", secret)
	if err != nil || !strings.HasPrefix(sealed, "sec1:") || strings.Contains(sealed, "the-secret") {
		t.Fatalf("sealed %q: %v", sealed, err)
	}
	again, _ := c.SealSecret(ctx, "shop_1", "shops.webhook_secret", secret)
	other, _ := c.SealSecret(ctx, "shop_1", "shops.webhook_secret", secret+"x")
	if again != sealed || other == sealed {
		t.Errorf("sealing is not deterministic per secret: %q %q %q", sealed, again, other)
	}
	if got, err := c.OpenSecret(ctx, "shop_1", "shops.webhook_secret", sealed); err != nil || got != secret {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := c.OpenSecret(ctx, "shop_1", "gdpr_settings.signing_secret", sealed); err == nil {
		t.Error("opened under another label")
	}
	if _, err := c.OpenSecret(ctx, "shop_2", "shops.webhook_secret", sealed); err == nil {
		t.Error("opened for another shop")
	}
	if got, err := c.OpenSecret(ctx, "shop_1", "shops.webhook_secret", "legacy-clear-secret"); err != nil || got != "legacy-clear-secret" {
		t.Errorf("clear value: %q %v", got, err)
	}
	if s, err := c.SealSecret(ctx, "shop_1", "x", ""); err != nil || s != "" {
		t.Errorf("empty secret: %q %v", s, err)
	}
	if err := v.ShredShop(ctx, "shop_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenSecret(ctx, "shop_1", "shops.webhook_secret", sealed); !errors.Is(err, envelope.ErrShopErased) ||
		domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("open after the shop was erased: %v", err)
	}
}
