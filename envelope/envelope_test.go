package envelope_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/vault"
	vaultsqlite "github.com/cgp-platform/cgp/vault/sqlite"
)

func newCodec(t *testing.T) (*envelope.Codec, vault.Vault) {
	t.Helper()
	master := bytes.Repeat([]byte{7}, 32)
	v, err := vaultsqlite.Open(vaultsqlite.Config{Path: filepath.Join(t.TempDir(), "vault.db"), MasterKey: master})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	cached := vault.NewCache(v, 100)
	return envelope.New(domain.Events(), cached), cached
}

func ptr(s string) *string { return &s }

func customerCreated() *domain.CustomerCreated {
	return &domain.CustomerCreated{CustomerID: "cus_A", ShopID: "shop_1", CustomerProfile: domain.CustomerProfile{
		ExternalID: "42", Email: ptr("ada@example.com"), FirstName: ptr("Ada"), LastName: ptr("Lovelace"),
		Phone: ptr("+15550100"), OrdersCount: 3, TotalSpent: 1999000, PlatformTags: []string{"vip"},
		Address: &domain.Address{City: "London"},
	}}
}

// record makes the recorded form of encoded data, as a log would return it.
func record(d eventlog.EventData) *eventlog.Event {
	return &eventlog.Event{EventData: d, StreamID: "customer-cus_A", Position: 1}
}

func TestRoundTripSealsPersonalData(t *testing.T) {
	codec, _ := newCodec(t)
	ctx := context.Background()
	id := uuid.New()
	data, err := codec.Encode(ctx, id, "shop_1", customerCreated(), time.Now(), eventlog.Metadata{Actor: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if data.Type != "CustomerCreated" || data.SchemaVersion != 1 || data.ShopID != "shop_1" {
		t.Fatalf("envelope %+v", data)
	}
	if len(data.Metadata.KeyIDs) != 2 || data.Metadata.KeyIDs[1] != "cus_A" {
		t.Fatalf("key ids %v", data.Metadata.KeyIDs)
	}
	for _, secret := range []string{"ada@example.com", "Lovelace", "London", "vip"} {
		if bytes.Contains(data.Data, []byte(secret)) {
			t.Fatalf("%q in the sealed payload", secret)
		}
	}
	// Without the shop seal, personal fields are still sealed with the
	// customer key; non-personal ones are readable.
	opened, err := codec.Open(ctx, record(data))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(opened, []byte("ada@example.com")) || bytes.Contains(opened, []byte("London")) {
		t.Fatalf("personal data under the shop key only: %s", opened)
	}
	if !bytes.Contains(opened, []byte(`"vip"`)) {
		t.Fatalf("non-personal field missing: %s", opened)
	}
	d, err := codec.Decode(ctx, record(data))
	if err != nil {
		t.Fatal(err)
	}
	got := d.Event.(*domain.CustomerCreated)
	if *got.Email != "ada@example.com" || got.Address.City != "London" || got.TotalSpent != 1999000 || len(d.Redacted) != 0 {
		t.Fatalf("decoded %+v redacted %v", got, d.Redacted)
	}
}

func TestShreddedCustomerDecodesToNull(t *testing.T) {
	codec, keys := newCodec(t)
	ctx := context.Background()
	data, err := codec.Encode(ctx, uuid.New(), "shop_1", customerCreated(), time.Now(), eventlog.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Shred(ctx, "shop_1", "cus_A"); err != nil {
		t.Fatal(err)
	}
	d, err := codec.Decode(ctx, record(data))
	if err != nil {
		t.Fatalf("a shredded subject must not stop decoding: %v", err)
	}
	got := d.Event.(*domain.CustomerCreated)
	if got.Email != nil || got.FirstName != nil || got.Address != nil {
		t.Fatalf("personal data survived shredding: %+v", got)
	}
	if got.OrdersCount != 3 || len(d.Redacted) != 5 {
		t.Fatalf("orders %d, redacted %v", got.OrdersCount, d.Redacted)
	}
	// New events of a shredded subject are recorded without their
	// personal fields: the erased customer's data is not kept again.
	again, err := codec.Encode(ctx, uuid.New(), "shop_1", customerCreated(), time.Now(), eventlog.Metadata{})
	if err != nil {
		t.Fatalf("encode for a shredded subject: %v", err)
	}
	d, err = codec.Decode(ctx, record(again))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Event.(*domain.CustomerCreated); got.Email != nil || got.FirstName != nil || got.Address != nil || got.OrdersCount != 3 {
		t.Fatalf("an event of a shredded subject kept personal data: %+v", got)
	}
	if _, err := keys.DataKey(ctx, "shop_1", "cus_A", false); !errors.Is(err, vault.ErrShredded) {
		t.Fatalf("after encoding, the shredded subject's key: %v", err)
	}
}

func TestShreddedShopCannotBeRead(t *testing.T) {
	codec, keys := newCodec(t)
	ctx := context.Background()
	data, err := codec.Encode(ctx, uuid.New(), "shop_1", &domain.CustomerTagsSet{CustomerID: "cus_A", ShopID: "shop_1", Tags: []string{"x"}}, time.Now(), eventlog.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.ShredShop(ctx, "shop_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := codec.Decode(ctx, record(data)); !errors.Is(err, envelope.ErrShopErased) {
		t.Fatalf("decode after shop erasure: %v", err)
	}
}

func TestSealIsBoundToTheEvent(t *testing.T) {
	codec, _ := newCodec(t)
	ctx := context.Background()
	data, err := codec.Encode(ctx, uuid.New(), "shop_1", customerCreated(), time.Now(), eventlog.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	moved := record(data)
	moved.ID = uuid.New()
	if _, err := codec.Decode(ctx, moved); err == nil {
		t.Fatal("a payload moved to another event id decoded")
	}
	flipped := record(data)
	flipped.Data = append([]byte(nil), data.Data...)
	flipped.Data[len(flipped.Data)-1] ^= 1
	if _, err := codec.Decode(ctx, flipped); err == nil {
		t.Fatal("a tampered payload decoded")
	}
}

func TestAccountEventsNeedNoShop(t *testing.T) {
	codec, _ := newCodec(t)
	ctx := context.Background()
	data, err := codec.Encode(ctx, uuid.New(), "", &domain.AccountCreated{AccountID: "acc_1", Name: "Agency", Plan: domain.PlanAgency}, time.Now(), eventlog.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := codec.Decode(ctx, record(data))
	if err != nil || d.Event.(*domain.AccountCreated).Name != "Agency" {
		t.Fatalf("decode %v %v", d, err)
	}
}

func BenchmarkEncodeDecodeCustomer(b *testing.B) {
	master := bytes.Repeat([]byte{7}, 32)
	v, err := vaultsqlite.Open(vaultsqlite.Config{Path: filepath.Join(b.TempDir(), "vault.db"), MasterKey: master})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	codec := envelope.New(domain.Events(), vault.NewCache(v, 100))
	ctx := context.Background()
	ev := customerCreated()
	b.ReportAllocs()
	for b.Loop() {
		data, err := codec.Encode(ctx, uuid.New(), "shop_1", ev, time.Now(), eventlog.Metadata{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := codec.Decode(ctx, record(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// Text that looks like a sealed field inside an ordinary string value is
// left alone: only real sealed fields are opened.
func TestLookalikeTextIsNotOpened(t *testing.T) {
	codec, _ := newCodec(t)
	ctx := context.Background()
	ev := customerCreated()
	tricky := []string{`x":"pii1:cus_A:AAAA`, `"pii1:`, `\":\"pii1:`, `\`}
	ev.PlatformTags = tricky
	ev.Note = ptr(`note":"pii1:cus_A:zz"`)
	data, err := codec.Encode(ctx, uuid.New(), "shop_1", ev, time.Now(), eventlog.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := codec.Decode(ctx, record(data))
	if err != nil {
		t.Fatal(err)
	}
	got := d.Event.(*domain.CustomerCreated)
	if len(got.PlatformTags) != len(tricky) || *got.Note != *ev.Note || *got.Email != "ada@example.com" {
		t.Fatalf("decoded %+v", got)
	}
	for i := range tricky {
		if got.PlatformTags[i] != tricky[i] {
			t.Fatalf("tag %d = %q, want %q", i, got.PlatformTags[i], tricky[i])
		}
	}
}
