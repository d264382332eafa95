package envelope_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
)

// noKeys is a vault that fails every call: an unsealed event must need
// none.
type noKeys struct{}

var errNoKeys = errors.New("no key may be asked for")

func (noKeys) DataKey(context.Context, string, string, bool) ([]byte, error) { return nil, errNoKeys }
func (noKeys) Shred(context.Context, string, string) error                   { return errNoKeys }
func (noKeys) ShredShop(context.Context, string) error                       { return errNoKeys }
func (noKeys) Close() error                                                  { return nil }

func TestUnsealedEventNeedsNoKey(t *testing.T) {
	ctx := context.Background()
	codec := envelope.New(domain.Events(), noKeys{})
	at := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	ev := &domain.ShopErased{ShopID: "shop_1", Reason: domain.ShopErasedRedact, RequestEventID: "e1", ErasedAt: at}
	data, err := codec.Encode(ctx, uuid.New(), "shop_1", ev, at, eventlog.Metadata{Actor: "system:shop_erasure"})
	if err != nil {
		t.Fatal(err)
	}
	if len(data.Metadata.KeyIDs) != 0 {
		t.Fatalf("key ids %v", data.Metadata.KeyIDs)
	}
	if !bytes.Contains(data.Data, []byte(`"reason":"shop_redact"`)) {
		t.Fatalf("payload %q is not in clear", data.Data)
	}
	d, err := codec.Decode(ctx, record(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Event.(*domain.ShopErased); *got != *ev {
		t.Fatalf("decoded %+v, want %+v", got, ev)
	}
}

func TestUnsealedEventReadableAfterShopShred(t *testing.T) {
	ctx := context.Background()
	codec, keys := newCodec(t)
	erased, err := codec.Encode(ctx, uuid.New(), "shop_1", &domain.ShopErased{ShopID: "shop_1", Reason: domain.ShopErasedRetention},
		time.Now(), eventlog.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.ShredShop(ctx, "shop_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := codec.Decode(ctx, record(erased)); err != nil {
		t.Fatalf("unsealed event after the shred: %v", err)
	}
	// Nothing sealed can be recorded for the shop any more, and the
	// failure is a not-found, not a server error.
	_, err = codec.Encode(ctx, uuid.New(), "shop_1", &domain.AppReinstalled{ShopID: "shop_1"}, time.Now(), eventlog.Metadata{})
	if !errors.Is(err, envelope.ErrShopErased) || domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("encode for an erased shop: %v", err)
	}
}

func TestSealedTypesStillNeedTheKey(t *testing.T) {
	ctx := context.Background()
	// A sealed type needs the shop key to be written.
	if _, err := envelope.New(domain.Events(), noKeys{}).Encode(ctx, uuid.New(), "shop_1", &domain.AppReinstalled{ShopID: "shop_1"},
		time.Now(), eventlog.Metadata{}); !errors.Is(err, errNoKeys) {
		t.Fatalf("sealed encode without keys: %v", err)
	}
	// A sealed type stored with the unsealed format byte is refused, so a
	// clear payload cannot pass for a sealed event.
	codec, _ := newCodec(t)
	forged := eventlog.EventData{ID: uuid.New(), Type: "AppReinstalled", SchemaVersion: 1, ShopID: "shop_1",
		Data: append([]byte{2}, `{"shop_id":"shop_1","reinstalled_at":"2026-11-21T00:00:00Z"}`...)}
	if _, err := codec.Decode(ctx, record(forged)); err == nil {
		t.Fatal("a sealed type decoded from a clear payload")
	}
	// And the shop-sealed events of a shredded shop stay unreadable.
	sealed, err := codec.Encode(ctx, uuid.New(), "shop_2", &domain.AppReinstalled{ShopID: "shop_2"}, time.Now(), eventlog.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	if sealed.Data[0] == 2 || bytes.Contains(sealed.Data, []byte("shop_2")) {
		t.Fatalf("sealed payload %q", sealed.Data)
	}
}
