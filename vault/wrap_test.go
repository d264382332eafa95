package vault_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/vault"
)

var (
	master1 = bytes.Repeat([]byte{1}, vault.MasterKeySize)
	master2 = bytes.Repeat([]byte{2}, vault.MasterKeySize)
)

func TestWrapRoundTrip(t *testing.T) {
	key := vault.NewKey()
	w, err := vault.Wrap(master1, "shop_a", "cus_1", key)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != vault.WrappedSize || w[0] != 1 {
		t.Fatalf("wrapped: %d bytes, version %d; want %d bytes, version 1", len(w), w[0], vault.WrappedSize)
	}
	if bytes.Contains(w, key) {
		t.Fatal("wrapped key contains the raw key")
	}
	got, err := vault.Unwrap(master1, "shop_a", "cus_1", w)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, key) {
		t.Fatal("unwrapped key differs")
	}
	w2, err := vault.Wrap(master1, "shop_a", "cus_1", key)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(w, w2) {
		t.Fatal("two wraps of one key are equal: the nonce is not random")
	}
}

func TestUnwrapRefuses(t *testing.T) {
	key := vault.NewKey()
	w, err := vault.Wrap(master1, "shop_a", "cus_1", key)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		master        []byte
		shop, subject string
		wrapped       []byte
	}{
		{"other subject", master1, "shop_a", "cus_2", w},
		{"other shop", master1, "shop_b", "cus_1", w},
		{"same bytes split differently", master1, "shop_ac", "us_1", w},
		{"other master key", master2, "shop_a", "cus_1", w},
		{"truncated", master1, "shop_a", "cus_1", w[:len(w)-1]},
		{"extended", master1, "shop_a", "cus_1", append(append([]byte(nil), w...), 0)},
		{"empty", master1, "shop_a", "cus_1", nil},
		{"unknown version", master1, "shop_a", "cus_1", append([]byte{2}, w[1:]...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := vault.Unwrap(c.master, c.shop, c.subject, c.wrapped)
			if !errors.Is(err, vault.ErrUnwrap) || k != nil {
				t.Fatalf("Unwrap: %d-byte key, %v; want ErrUnwrap", len(k), err)
			}
		})
	}
	for i := range w {
		for _, bit := range []byte{0x01, 0x80} {
			bad := append([]byte(nil), w...)
			bad[i] ^= bit
			if _, err := vault.Unwrap(master1, "shop_a", "cus_1", bad); !errors.Is(err, vault.ErrUnwrap) {
				t.Fatalf("byte %d bit %#x flipped: %v, want ErrUnwrap", i, bit, err)
			}
		}
	}
}

func TestWrapRejectsBadInput(t *testing.T) {
	key := vault.NewKey()
	if _, err := vault.Wrap(master1[:16], "shop_a", "cus_1", key); !errors.Is(err, vault.ErrInvalidMasterKey) {
		t.Errorf("16-byte master: %v, want ErrInvalidMasterKey", err)
	}
	if _, err := vault.Unwrap(nil, "shop_a", "cus_1", make([]byte, vault.WrappedSize)); !errors.Is(err, vault.ErrInvalidMasterKey) {
		t.Errorf("nil master: %v, want ErrInvalidMasterKey", err)
	}
	if _, err := vault.Wrap(master1, "shop_a", "cus_1", key[:16]); err == nil {
		t.Error("16-byte data key wrapped")
	}
	for _, ids := range [][2]string{{"", "cus_1"}, {"shop_a", ""}, {"a\x00b", "c"}, {"a", "\xc3\x28"}, {strings.Repeat("x", vault.MaxIDLen+1), "c"}} {
		if _, err := vault.Wrap(master1, ids[0], ids[1], key); !errors.Is(err, vault.ErrInvalidID) {
			t.Errorf("Wrap(%q, %q): %v, want ErrInvalidID", ids[0], ids[1], err)
		}
		if _, err := vault.Unwrap(master1, ids[0], ids[1], nil); !errors.Is(err, vault.ErrInvalidID) {
			t.Errorf("Unwrap(%q, %q): %v, want ErrInvalidID", ids[0], ids[1], err)
		}
	}
}

func TestValidateMasterKey(t *testing.T) {
	if err := vault.ValidateMasterKey(master1); err != nil {
		t.Fatalf("%d-byte master key refused: %v", len(master1), err)
	}
	for _, k := range [][]byte{nil, master1[:16], append(master1[:vault.MasterKeySize:vault.MasterKeySize], 0)} {
		if err := vault.ValidateMasterKey(k); !errors.Is(err, vault.ErrInvalidMasterKey) {
			t.Errorf("%d-byte master key: %v, want ErrInvalidMasterKey", len(k), err)
		}
	}
}

func TestMasterCheck(t *testing.T) {
	check, err := vault.NewMasterCheck(master1)
	if err != nil {
		t.Fatal(err)
	}
	if err := vault.VerifyMasterCheck(master1, check); err != nil {
		t.Fatalf("right key: %v", err)
	}
	if err := vault.VerifyMasterCheck(master2, check); !errors.Is(err, vault.ErrWrongMasterKey) {
		t.Fatalf("wrong key: %v, want ErrWrongMasterKey", err)
	}
	if err := vault.VerifyMasterCheck(master1, nil); !errors.Is(err, vault.ErrWrongMasterKey) {
		t.Fatalf("empty check: %v, want ErrWrongMasterKey", err)
	}
	if err := vault.VerifyMasterCheck(master1[:3], check); !errors.Is(err, vault.ErrInvalidMasterKey) {
		t.Fatalf("short key: %v, want ErrInvalidMasterKey", err)
	}
	// A wrapped key is no check value, and the reverse.
	w, err := vault.Wrap(master1, "a", "b", vault.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	if err := vault.VerifyMasterCheck(master1, w); !errors.Is(err, vault.ErrWrongMasterKey) {
		t.Fatalf("wrapped key as check: %v, want ErrWrongMasterKey", err)
	}
}

func TestNewKey(t *testing.T) {
	a, b := vault.NewKey(), vault.NewKey()
	if len(a) != vault.KeySize || len(b) != vault.KeySize {
		t.Fatalf("key sizes %d, %d; want %d", len(a), len(b), vault.KeySize)
	}
	if bytes.Equal(a, b) {
		t.Fatal("two new keys are equal")
	}
}

func FuzzUnwrap(f *testing.F) {
	w, err := vault.Wrap(master1, "shop_a", "cus_1", vault.NewKey())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(w, "shop_a", "cus_1")
	f.Add([]byte{1}, "s", "c")
	f.Add([]byte{}, "", "")
	f.Fuzz(func(t *testing.T, wrapped []byte, shop, subject string) {
		k, err := vault.Unwrap(master1, shop, subject, wrapped)
		if err == nil {
			// Only a genuine wrap for shop_a/cus_1 (the seed, possibly made
			// in another fuzz process) may open; mutated input must not.
			if len(k) != vault.KeySize || shop != "shop_a" || subject != "cus_1" || len(wrapped) != vault.WrappedSize {
				t.Fatalf("Unwrap accepted %x for %q/%q", wrapped, shop, subject)
			}
		} else if !errors.Is(err, vault.ErrUnwrap) && !errors.Is(err, vault.ErrInvalidID) {
			t.Fatalf("error %v wraps neither ErrUnwrap nor ErrInvalidID", err)
		}
	})
}
