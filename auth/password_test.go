package auth_test

import (
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/auth"
)

func TestHashPasswordVerifies(t *testing.T) {
	h, err := auth.HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q: not the documented PHC string", h)
	}
	if !auth.VerifyPassword(h, "correct horse battery") {
		t.Fatal("the right password does not verify")
	}
	if auth.VerifyPassword(h, "correct horse batterz") || auth.VerifyPassword(h, "") {
		t.Fatal("a wrong password verifies")
	}
	h2, err := auth.HashPassword("correct horse battery")
	if err != nil || h2 == h {
		t.Fatalf("two hashes of one password share a salt (%v)", err)
	}
	parsed, err := auth.ParseHash(h)
	if err != nil || parsed.String() != h {
		t.Fatalf("ParseHash(%q) = %v, %v", h, parsed, err)
	}
	if auth.VerifyNobody("correct horse battery") {
		t.Fatal("VerifyNobody answered true")
	}
}

func TestHashPasswordRefusesShortPasswords(t *testing.T) {
	if _, err := auth.HashPassword("elevenchars"); err == nil {
		t.Fatal("an 11-byte password was hashed")
	}
	if _, err := auth.HashPassword(strings.Repeat("x", auth.MaxPasswordLength+1)); err == nil {
		t.Fatal("an over-long password was hashed")
	}
}

func TestParseHashRefusesMalformedStrings(t *testing.T) {
	good := "$argon2id$v=19$m=19456,t=2,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	if _, err := auth.ParseHash(good); err != nil {
		t.Fatalf("ParseHash(good): %v", err)
	}
	for _, s := range []string{"", "$argon2i$v=19$m=19456,t=2,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"$argon2id$v=16$m=19456,t=2,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"$argon2id$v=19$m=99999999,t=2,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"$argon2id$v=19$m=19456,t=0,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"$argon2id$v=19$m=19456,t=2,p=1$AA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"$argon2id$v=19$m=19456,t=2,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAA=",
		"$2a$10$abcdefghijklmnopqrstuv"} {
		if _, err := auth.ParseHash(s); err == nil {
			t.Errorf("ParseHash(%q) accepted", s)
		}
		if auth.VerifyPassword(s, "whatever password") {
			t.Errorf("VerifyPassword(%q) matched", s)
		}
	}
}

// FuzzParseHash: ParseHash never panics, and whatever it accepts is
// within bounds and encodes back to the same string.
func FuzzParseHash(f *testing.F) {
	f.Add("$argon2id$v=19$m=19456,t=2,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("$argon2id$v=19$m=8,t=1,p=1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("$argon2id$v=19$m=,t=,p=$$")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := auth.ParseHash(s)
		if err != nil {
			return
		}
		if h.MemoryKiB > 256*1024 || h.Iterations > 10 || h.Threads == 0 || len(h.Key) < 16 {
			t.Fatalf("ParseHash(%q) accepted out-of-bounds parameters %+v", s, h)
		}
		if h.String() != s {
			t.Fatalf("ParseHash(%q) re-encodes as %q", s, h.String())
		}
	})
}
