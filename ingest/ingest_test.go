package ingest_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest"
)

func TestParseCustomerFixtures(t *testing.T) {
	created, err := ingest.ParseCustomer(mustRead(t, "testdata/customers_create.json"))
	if err != nil {
		t.Fatal(err)
	}
	if created.ExternalID != "706405506930370084" || *created.Email != "bob@biller.com" || created.Phone != nil ||
		created.OrdersCount != 0 || created.AcceptsMarketing || created.PlatformTags != nil || created.Address != nil {
		t.Fatalf("create: %+v", created)
	}
	if want := time.Date(2026, 10, 1, 14, 4, 55, 0, time.UTC); !created.PlatformCreated.Equal(want) {
		t.Fatalf("created_at %v", created.PlatformCreated)
	}
	updated, err := ingest.ParseCustomer(mustRead(t, "testdata/customers_update.json"))
	if err != nil {
		t.Fatal(err)
	}
	if updated.OrdersCount != 3 || updated.TotalSpent.String() != "375.30" || !updated.AcceptsMarketing ||
		strings.Join(updated.PlatformTags, "|") != "loyal|newsletter" || updated.Address.City != "Louisville" ||
		*updated.Phone != "+16136120707" || updated.Note != nil {
		t.Fatalf("update: %+v", updated)
	}
}

func TestParseCustomerRejects(t *testing.T) {
	for _, body := range []string{``, `[]`, `{"email":"x@example.com"}`, `{"id":1,"total_spent":"abc"}`,
		`{"id":1,"created_at":"yesterday"}`, `{"id":"` + strings.Repeat("9", 65) + `"}`, `{"id":1`} {
		if _, err := ingest.ParseCustomer([]byte(body)); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("ParseCustomer(%q) err = %v", body, err)
		}
	}
}

func TestVerifyCommerce(t *testing.T) {
	secret, body := []byte("shop-secret-0123456789"), []byte(`{"id":1}`)
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	good := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if ingest.SignCommerce(secret, body) != good || !ingest.VerifyCommerce(secret, body, good) {
		t.Fatal("a correct signature was refused")
	}
	for _, bad := range []string{"", "x", good[:len(good)-2], base64.StdEncoding.EncodeToString([]byte("short")),
		ingest.SignCommerce([]byte("other-secret-012345"), body), strings.ToLower(good)} {
		if bad != good && ingest.VerifyCommerce(secret, body, bad) {
			t.Errorf("signature %q accepted", bad)
		}
	}
	if ingest.VerifyCommerce(secret, append(body, ' '), good) {
		t.Fatal("a changed body verified")
	}
}

func FuzzParseCustomer(f *testing.F) {
	f.Add(mustReadF(f, "testdata/customers_create.json"))
	f.Add(mustReadF(f, "testdata/customers_update.json"))
	f.Add([]byte(`{"id":1,"total_spent":"1.5","tags":",,a,"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := ingest.ParseCustomer(body)
		if err != nil {
			if domain.ErrorCode(err) != domain.CodeInvalid {
				t.Fatalf("non-validation error %v", err)
			}
			return
		}
		if p.ExternalID == "" || len(p.ExternalID) > 64 || p.OrdersCount < 0 {
			t.Fatalf("accepted an invalid profile %+v", p)
		}
		for _, tag := range p.PlatformTags {
			if tag == "" || strings.TrimSpace(tag) != tag {
				t.Fatalf("untrimmed tag %q", tag)
			}
		}
	})
}

func FuzzVerifyCommerce(f *testing.F) {
	f.Add([]byte("secret-0123456789"), []byte(`{"id":1}`), "")
	f.Add([]byte("secret-0123456789"), []byte(`{}`), "AAAA")
	f.Fuzz(func(t *testing.T, secret, body []byte, sig string) {
		if ingest.VerifyCommerce(secret, body, sig) && sig != ingest.SignCommerce(secret, body) {
			// Base64 has one canonical encoding of 32 bytes with padding;
			// anything else verifying would be a forgery.
			t.Fatalf("non-canonical signature %q verified", sig)
		}
		if !ingest.VerifyCommerce(secret, body, ingest.SignCommerce(secret, body)) {
			t.Fatal("own signature refused")
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustReadF(f *testing.F, path string) []byte {
	f.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
