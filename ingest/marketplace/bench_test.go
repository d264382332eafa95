package marketplace_test

import (
	"testing"
	"time"
)

// BenchmarkVerify measures verifying one delivery of each contract (a
// 1 KiB body), the receiver's hot path before the append.
func BenchmarkVerify(b *testing.B) {
	body := make([]byte, 1024)
	for i := range body {
		body[i] = 'a'
	}
	now := time.Now()
	for _, c := range []struct{ name, secret, appKey string }{
		{"etsy", vectorSecret, ""},
		{"tiktok_shop", "tiktok-app-secret-0123456789", "68xu9ks5p4i8"},
		{"generic", "generic-marketplace-secret-01", ""},
	} {
		ct := contract(b, c.name)
		signed, err := ct.Sign(c.secret, c.appKey, "acct", "dlv-1", now, body)
		if err != nil {
			b.Fatal(err)
		}
		h := header(signed)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := ct.Verify(h, body, c.secret, c.appKey, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
