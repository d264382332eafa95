package domain_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestConciergeEventsAreInTheCatalogue(t *testing.T) {
	c := domain.Events()
	for _, name := range []string{"ConciergeSettingsChanged", "ConciergeAnswered"} {
		if c.Version(name) != 1 {
			t.Errorf("%s is not in the catalogue", name)
		}
	}
	a := domain.ConciergeReplyMessageID("cnv_1", "evt-1")
	if a != domain.ConciergeReplyMessageID("cnv_1", "evt-1") || a == domain.ConciergeReplyMessageID("cnv_1", "evt-2") ||
		!strings.HasPrefix(a, domain.PrefixMessage) {
		t.Errorf("reply message ids %s", a)
	}
}

func TestConciergeSettingsConfigure(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	str := func(s string) *string { return &s }
	num := func(f float64) *float64 { return &f }
	configured := &domain.ConciergeSettingsAgg{}
	configured.Apply(&domain.ConciergeSettingsChanged{Settings: domain.ConciergeSettings{
		Policies: map[string]string{"returns": "30 days", "contact": "hello@shop"}, Keywords: []string{"warranty"}, Threshold: 0.7}})
	for _, c := range []struct {
		name  string
		agg   *domain.ConciergeSettingsAgg
		patch domain.ConciergeSettingsPatch
		field string
		want  string
	}{
		{name: "defaults and a policy", agg: &domain.ConciergeSettingsAgg{},
			patch: domain.ConciergeSettingsPatch{Policies: map[string]*string{"shipping": str("  2 days  ")}},
			want:  "map[shipping:2 days] [] 0.6"},
		{name: "partial: the rest stays", agg: configured, patch: domain.ConciergeSettingsPatch{Threshold: num(0)},
			want: "map[contact:hello@shop returns:30 days] [warranty] 0"},
		{name: "empty and null remove", agg: configured,
			patch: domain.ConciergeSettingsPatch{Policies: map[string]*string{"returns": str(" "), "contact": nil}},
			want:  "map[] [warranty] 0.7"},
		{name: "keywords lower-cased, de-duplicated", agg: configured,
			patch: domain.ConciergeSettingsPatch{Keywords: &[]string{"Broken", "broken ", "money back"}},
			want:  "map[contact:hello@shop returns:30 days] [broken money back] 0.7"},
		{name: "unknown topic", agg: configured, patch: domain.ConciergeSettingsPatch{Policies: map[string]*string{"warranty": str("x")}},
			field: "concierge.policies.warranty"},
		{name: "policy too long", agg: configured,
			patch: domain.ConciergeSettingsPatch{Policies: map[string]*string{"returns": str(strings.Repeat("é", domain.MaxConciergePolicy+1))}},
			field: "concierge.policies.returns"},
		{name: "policy of the longest length", agg: configured,
			patch: domain.ConciergeSettingsPatch{Policies: map[string]*string{"returns": str(strings.Repeat("é", domain.MaxConciergePolicy))}},
			want:  "map[contact:hello@shop returns:" + strings.Repeat("é", domain.MaxConciergePolicy) + "] [warranty] 0.7"},
		{name: "keyword without letters", agg: configured, patch: domain.ConciergeSettingsPatch{Keywords: &[]string{"!!"}},
			field: "concierge.keywords"},
		{name: "keyword too long", agg: configured,
			patch: domain.ConciergeSettingsPatch{Keywords: &[]string{strings.Repeat("k", domain.MaxConciergeKeyword+1)}},
			field: "concierge.keywords"},
		{name: "threshold above 1", agg: configured, patch: domain.ConciergeSettingsPatch{Threshold: num(1.01)}, field: "concierge.threshold"},
		{name: "threshold below 0", agg: configured, patch: domain.ConciergeSettingsPatch{Threshold: num(-0.1)}, field: "concierge.threshold"},
	} {
		ev, err := c.agg.Configure("shop_1", c.patch, now)
		if c.field != "" {
			if domain.ErrorCode(err) != domain.CodeInvalid || !strings.Contains(err.Error(), c.field) {
				t.Errorf("%s: %v, want a validation error on %s", c.name, err, c.field)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		s := ev.Settings
		if got := strings.Join([]string{fmtMap(s.Policies), "[" + strings.Join(s.Keywords, " ") + "]", trimFloat(s.Threshold)}, " "); got != c.want ||
			ev.ShopID != "shop_1" || !ev.ChangedAt.Equal(now) {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if configured.Settings.Policies["returns"] != "30 days" {
		t.Errorf("an edit changed the aggregate's settings: %v", configured.Settings)
	}
}

func fmtMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + m[k]
	}
	return "map[" + strings.Join(parts, " ") + "]"
}

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
