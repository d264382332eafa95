package writeapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// FuzzAudienceBody feeds arbitrary attributes to the audience body parser
// and the domain's validation: they never panic, and an accepted audience
// has ordered bounds and known stages.
func FuzzAudienceBody(f *testing.F) {
	for _, seed := range []string{
		`{"name":"VIP","filters":{"lifecycle_stages":["at_risk"],"tags":["vip"],"min_total_spent":"500","max_total_spent":900.5}}`,
		`{"name":"x","filters":{"last_order_after":"2026-01-01T00:00:00Z","last_order_before":"2025-01-01T00:00:00Z"}}`,
		`{"name":"x","filters":{"min_total_spent":true}}`,
		`{"name":"x","filters":{"min_total_spent":"1e5"}}`,
		`{"name":"","filters":{"tags":[""]}}`,
	} {
		f.Add([]byte(seed))
	}
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw []byte) {
		var body audienceCreateBody
		if json.Unmarshal(raw, &body) != nil {
			return
		}
		d, err := body.draft()
		if err != nil {
			return
		}
		ev, err := domain.NewAudience("shop_1", d, now)
		if err != nil {
			if domain.ErrorCode(err) != domain.CodeInvalid {
				t.Fatalf("%s: %v is not a validation error", raw, err)
			}
			return
		}
		fl := ev.Filters
		if fl.MinTotalSpent != nil && fl.MaxTotalSpent != nil && *fl.MinTotalSpent > *fl.MaxTotalSpent ||
			fl.LastOrderAfter != nil && fl.LastOrderBefore != nil && fl.LastOrderAfter.After(*fl.LastOrderBefore) || ev.Name == "" {
			t.Fatalf("%s accepted as %+v", raw, ev)
		}
	})
}
