package customers

import (
	"context"
	"fmt"
	"slices"
)

// PersonalColumns are the positions, in the customers table's column
// order (that of the rows the warehouse ships), of the columns holding a
// customer's personal data (`cgp gdpr verify` checks them in the
// warehouse's copy of an erased profile).
func (q *Queries) PersonalColumns(ctx context.Context) ([]int, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT name FROM pragma_table_info('customers') ORDER BY cid`)
	if err != nil {
		return nil, fmt.Errorf("columns of customers: %w", err)
	}
	defer rows.Close()
	var personal []int
	for i := 0; rows.Next(); i++ {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("columns of customers: %w", err)
		}
		if slices.Contains([]string{"email", "first_name", "last_name", "phone"}, name) {
			personal = append(personal, i)
		}
	}
	return personal, rows.Err()
}
