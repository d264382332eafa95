package tenancy

import (
	"context"
	"fmt"
)

// InstalledShops returns up to limit ids of the shops whose app is
// installed (no app/uninstalled recorded), in id order after the id after
// ("" for the first page): the daily decision-intelligence schedule's
// work list.
func (q *Queries) InstalledShops(ctx context.Context, after string, limit int) ([]string, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT shop_id FROM shops WHERE uninstalled_at = 0 AND shop_id > ? ORDER BY shop_id LIMIT ?`,
		after, limit)
	if err != nil {
		return nil, fmt.Errorf("installed shops: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
