package domain

import (
	"strconv"
	"strings"
)

// Amount is a decimal amount of money in ten-thousandths of the currency's
// major unit, enough for every ISO 4217 currency (at most 3 decimals)
// without floating-point error.
type Amount int64

// AmountScale is the number of Amount units in one major unit.
const AmountScale = 10000

// ParseAmount parses a decimal string such as "199.90" or "-5" (at most 4
// decimals, as the commerce platform sends prices).
func ParseAmount(s string) (Amount, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, Invalid("amount", "empty amount")
	}
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(frac) > 4 || len(whole) > 14 {
		return 0, Invalid("amount", "malformed amount")
	}
	for _, part := range []string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, Invalid("amount", "malformed amount")
			}
		}
	}
	var w, f int64
	if whole != "" {
		w, _ = strconv.ParseInt(whole, 10, 64)
	}
	if frac != "" {
		f, _ = strconv.ParseInt(frac+strings.Repeat("0", 4-len(frac)), 10, 64)
	}
	a := Amount(w*AmountScale + f)
	if neg {
		a = -a
	}
	return a, nil
}

// Float returns the amount in major units, for JSON numbers.
func (a Amount) Float() float64 { return float64(a) / AmountScale }

// String renders the amount with the fewest decimals (at least 2).
func (a Amount) String() string {
	neg := a < 0
	if neg {
		a = -a
	}
	s := strconv.FormatInt(int64(a/AmountScale), 10) + "." + strconv.FormatInt(int64(a%AmountScale)+AmountScale, 10)[1:]
	s = strings.TrimRight(s, "0")
	if i := strings.IndexByte(s, '.'); len(s)-i-1 < 2 {
		s += strings.Repeat("0", 2-(len(s)-i-1))
	}
	if neg {
		s = "-" + s
	}
	return s
}
