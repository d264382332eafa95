package audit

import (
	"context"
	"fmt"
)

// Built reports whether the read-model version holds the audit index
// (false: the server never ran a version with it).
func (q *Queries) Built(ctx context.Context) (bool, error) {
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'audit_events'`).Scan(&n); err != nil {
		return false, fmt.Errorf("audit index: %w", err)
	}
	return n > 0, nil
}
