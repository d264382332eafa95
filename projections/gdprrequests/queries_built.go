package gdprrequests

import (
	"context"
	"fmt"
)

// Built reports whether the read-model version holds the GDPR requests
// (false: the server never ran a version with them).
func (q *Queries) Built(ctx context.Context) (bool, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'gdpr_requests'`).Scan(&n); err != nil {
		return false, fmt.Errorf("gdpr requests: %w", err)
	}
	return n > 0, nil
}
