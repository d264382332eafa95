package marketplace

import (
	"crypto/sha256"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// seedPayloads adds every testdata payload of a marketplace (prefix) and a
// few damaged ones to f.
func seedPayloads(f *testing.F, prefix string) {
	files, err := filepath.Glob(filepath.Join("testdata", prefix+"*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no testdata for %s: %v", prefix, err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	for _, s := range []string{``, `{}`, `null`, `[]`, `{"type":`, `{"data":null,"type":1}`, `{"event_type":"order.","resource_url":"%%"}`} {
		f.Add([]byte(s))
	}
}

// fuzzParse checks that a contract's parser never panics, fails only with
// a validation failure, and gives an order only with an id and a status.
func fuzzParse(f *testing.F, name, prefix string) {
	seedPayloads(f, prefix)
	c, _ := Lookup(name)
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := c.Parse(body, time.Unix(1767258000, 0))
		if err != nil {
			if domain.ErrorCode(err) != domain.CodeInvalid {
				t.Fatalf("error is not a validation failure: %v", err)
			}
			return
		}
		if n.Kind == "" {
			t.Fatal("a notice without a kind")
		}
		if n.Order != nil && n.Order.ID == "" && name != domain.MarketplaceGeneric {
			t.Fatalf("an order without an id: %+v", n.Order)
		}
		if n.Order != nil && n.Order.Total != nil && *n.Order.Total < 0 {
			t.Fatalf("negative total %v", *n.Order.Total)
		}
	})
}

func FuzzParseEtsy(f *testing.F)    { fuzzParse(f, domain.MarketplaceEtsy, "etsy_") }
func FuzzParseTikTok(f *testing.F)  { fuzzParse(f, domain.MarketplaceTikTokShop, "tiktok_") }
func FuzzParseGeneric(f *testing.F) { fuzzParse(f, domain.MarketplaceGeneric, "generic_") }

// FuzzTopLevel: the tolerant field reader never panics and reports only
// the fields asked for, each a value that occurs in the body.
func FuzzTopLevel(f *testing.F) {
	seedPayloads(f, "")
	f.Fuzz(func(t *testing.T, body []byte) {
		got := topLevel(body, "shop_id", "type", "tts_notification_id")
		for k := range got {
			if k != "shop_id" && k != "type" && k != "tts_notification_id" {
				t.Fatalf("unasked field %q", k)
			}
		}
	})
}

// FuzzSignatureHeaders: signature headers of every encoding decode to at
// most maxSignatures MACs of 32 bytes, and verification never panics.
func FuzzSignatureHeaders(f *testing.F) {
	for _, s := range []string{
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
		"v1a,AAAA v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1,",
		"sha256=" + strings.Repeat("ab", 32),
		strings.Repeat("AB", 32),
		"", " ", ",", "v1,", strings.Repeat("v1,x ", 20),
	} {
		f.Add(s, "1614265330")
	}
	f.Fuzz(func(t *testing.T, sig, ts string) {
		for _, c := range Contracts() {
			macs := c.signatures(sig)
			if len(macs) > maxSignatures {
				t.Fatalf("%s: %d signatures", c.Name, len(macs))
			}
			for _, m := range macs {
				if len(m) != sha256.Size {
					t.Fatalf("%s: a MAC of %d bytes", c.Name, len(m))
				}
			}
			h := http.Header{}
			h.Set(c.Signature, sig)
			h.Set("webhook-id", "msg_1")
			h.Set("webhook-timestamp", ts)
			_ = c.Verify(h, []byte(`{}`), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "key", time.Unix(1614265330, 0))
		}
	})
}
