package customers_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/internal/testenv"
	"github.com/cgp-platform/cgp/projections/customers"
)

// recipientsStore holds n customers of one shop: every other one subscribed
// to e-mail, one in ten unsubscribed, the rest unknown; one in twenty has
// no e-mail address.
func recipientsStore(b *testing.B, n int) (*customers.Queries, string) {
	b.Helper()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	core := testenv.New(b, func() time.Time { return now })
	rs := core.ReadSide(b, customers.Projector(core.Codec, func() time.Time { return now }))
	shop := "shop_bench"
	err := rs.Store.Maintain(context.Background(), func(tx *sql.Tx) error {
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("cus_%08d", i)
			var email any = fmt.Sprintf("c%d@example.com", i)
			if i%20 == 0 {
				email = nil
			}
			if _, err := tx.Exec(`INSERT INTO customers (customer_id, shop_id, external_id, email, phone, created_at, updated_at, version, stage)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'prospect')`, id, shop, fmt.Sprint(i), email, "+1 555 0000", now.UnixMicro(), now.UnixMicro(), i+1); err != nil {
				return err
			}
			state := ""
			switch {
			case i%2 == 0:
				state = "subscribed"
			case i%10 == 1:
				state = "unsubscribed"
			}
			if state != "" {
				if _, err := tx.Exec(`INSERT INTO customer_consents (customer_id, channel, shop_id, state, source, decided_at, version)
					VALUES (?, 'email', ?, ?, 'platform', ?, ?)`, id, shop, state, now.UnixMicro(), i+1); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return customers.NewQueries(rs.DB()), shop
}

// BenchmarkRecipients lists the e-mail recipients of a 100,000-customer
// audience (the whole shop).
func BenchmarkRecipients(b *testing.B) {
	q, shop := recipientsStore(b, 100_000)
	ctx := context.Background()
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ids, skipped, err := q.Recipients(ctx, shop, domain.AudienceFilters{}, domain.ChannelEmail, now)
		if err != nil || len(ids) != 45_000 || skipped.NoAddress != 5_000 || skipped.NoConsent != 50_000 {
			b.Fatalf("%d recipients, %+v, %v", len(ids), skipped, err)
		}
	}
}
