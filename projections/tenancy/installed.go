package tenancy

import (
	"context"
	"fmt"

	"github.com/cgp-platform/cgp/readmodel"
)

// InstalledShops returns up to limit ids of the shops whose app is
// installed (no app/uninstalled recorded), in id order after the id after
// ("" for the first page): the daily decision-intelligence schedule's
// work list.
func (q *Queries) InstalledShops(ctx context.Context, after string, limit int) ([]string, error) {
	out, err := readmodel.Strings(ctx, q.db, `SELECT shop_id FROM shops WHERE uninstalled_at = 0 AND shop_id > ? ORDER BY shop_id LIMIT ?`,
		after, limit)
	if err != nil {
		return nil, fmt.Errorf("installed shops: %w", err)
	}
	return out, nil
}
