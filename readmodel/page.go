package readmodel

// CutPage trims a page read with one row more than limit (to tell whether
// more rows follow) and returns the key of its last row when they do, nil
// when the page is the last.
func CutPage[T, K any](rows []T, limit int, key func(*T) K) ([]T, *K, error) {
	if len(rows) <= limit {
		return rows, nil, nil
	}
	rows = rows[:limit]
	k := key(&rows[limit-1])
	return rows, &k, nil
}
