package attribution

import (
	"math/bits"
	"slices"

	"github.com/cgp-platform/cgp/domain"
)

// split shares amount (>= 0) among s.parts (summing to total > 0) by
// largest remainder: each index gets floor(amount × part / total), computed
// exactly in 128 bits, and the units left (fewer than the number of parts)
// go one each to the largest remainders, ties to the lower index. The
// result sums exactly to amount; it is valid until the next call.
func (s *splitter) split(amount domain.Amount, total uint64) []int64 {
	n := len(s.parts)
	s.quot = slices.Grow(s.quot[:0], n)[:n]
	s.remain = slices.Grow(s.remain[:0], n)[:n]
	a := uint64(amount)
	var given uint64
	for i, p := range s.parts {
		// p <= total and a < 2^63, so hi < total and Div64 cannot overflow.
		hi, lo := bits.Mul64(a, p)
		q, r := bits.Div64(hi, lo, total)
		s.quot[i], s.remain[i] = int64(q), r
		given += q
	}
	left := a - given
	if left == 0 {
		return s.quot
	}
	for i := range s.order {
		s.order[i] = i
	}
	slices.SortFunc(s.order, func(x, y int) int {
		if s.remain[x] != s.remain[y] {
			if s.remain[x] > s.remain[y] {
				return -1
			}
			return 1
		}
		return x - y
	})
	for _, i := range s.order[:left] {
		s.quot[i]++
	}
	return s.quot
}
