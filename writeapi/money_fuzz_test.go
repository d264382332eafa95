package writeapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
)

// FuzzParseMoney: any JSON value is an amount of money or a 422 naming the
// field, never a panic; accepted amounts are not negative, have at most
// two decimals and print back to the same value.
func FuzzParseMoney(f *testing.F) {
	for _, seed := range []string{`"19.90"`, `19.9`, `0`, `"0.00"`, `"12.345"`, `"-1"`, `1e3`, `"1,50"`, `null`, `true`, `{}`, `"99999999999999.99"`, `" 5 "`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := parseMoney("variants[0].price", json.RawMessage(raw))
		if err != nil {
			if !strings.Contains(err.Error(), "variants[0].price") && !strings.Contains(err.Error(), "amount of money") {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		if a < 0 || int64(a)%(domain.AmountScale/100) != 0 {
			t.Fatalf("%q parsed to %d", raw, a)
		}
	})
}
