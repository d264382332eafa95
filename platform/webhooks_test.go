package platform_test

import (
	"slices"
	"testing"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
	"github.com/cgp-platform/cgp/platform"
)

func TestSubscriptionsFollowTheGrant(t *testing.T) {
	all, withheld := platform.Subscriptions(domain.DeclaredPlatformScopes())
	if len(withheld) != 0 || len(all) != len(shopify.Topics())-3 {
		t.Fatalf("full grant: %d subscriptions, withheld %v", len(all), withheld)
	}
	for _, s := range all {
		want := platform.EventsPath
		if s.Topic == shopify.TopicAppScopesUpdate {
			want = platform.ScopesUpdatePath
		}
		if s.Path != want {
			t.Errorf("%s at %s, want %s", s.Topic, s.Path, want)
		}
		if s.Topic == shopify.TopicShopRedact || s.Topic == shopify.TopicCustomersRedact {
			t.Errorf("compliance topic %s registered through the API", s.Topic)
		}
	}
	// write_orders stands for read_orders; no read_themes: the theme topics wait.
	subs, withheld := platform.Subscriptions([]string{"write_orders", "read_customers"})
	var topics []string
	for _, s := range subs {
		topics = append(topics, s.Topic)
	}
	if !slices.Contains(topics, shopify.TopicOrdersCreate) || !slices.Contains(topics, shopify.TopicAppUninstalled) ||
		slices.Contains(topics, shopify.TopicThemesPublish) || !slices.Contains(withheld, shopify.TopicThemesPublish) {
		t.Fatalf("subscriptions %v, withheld %v", topics, withheld)
	}
}
