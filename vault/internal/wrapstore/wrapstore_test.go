package wrapstore_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/cgp-platform/cgp/vault"
	"github.com/cgp-platform/cgp/vault/internal/batch"
	"github.com/cgp-platform/cgp/vault/internal/wrapstore"
)

var master = bytes.Repeat([]byte{7}, vault.MasterKeySize)

func wrap(t *testing.T, subject string, key []byte) []byte {
	t.Helper()
	w, err := vault.Wrap(master, "shop_a", subject, key)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// store returns a Store whose look-up answers from rows (a nil entry is a
// tombstone) and whose create batch answers with commit.
func store(t *testing.T, rows map[string][]byte, commit func(wrapstore.CreateRequest) (wrapstore.CreateResult, error)) *wrapstore.Store {
	t.Helper()
	creates := batch.New(batch.Config[wrapstore.CreateRequest, wrapstore.CreateResult]{
		Max: 8,
		Commit: func(reqs []wrapstore.CreateRequest, out []wrapstore.CreateResult) (uint64, error) {
			for i, r := range reqs {
				res, err := commit(r)
				if err != nil {
					return 0, err
				}
				out[i] = res
			}
			return 0, nil
		},
	})
	t.Cleanup(creates.Close)
	return &wrapstore.Store{
		Master: master,
		Lookup: func(ctx context.Context, shop, subject string) ([]byte, bool, error) {
			if shop == "shop_lookup_fails" {
				return nil, false, errBoom
			}
			w, ok := rows[subject]
			return w, ok && w == nil, nil
		},
		Creates: creates,
	}
}

var errBoom = errors.New("boom")

func noCreate(t *testing.T) func(wrapstore.CreateRequest) (wrapstore.CreateResult, error) {
	return func(r wrapstore.CreateRequest) (wrapstore.CreateResult, error) {
		t.Errorf("%s/%s: create queued", r.Shop, r.Subject)
		return wrapstore.CreateResult{}, errBoom
	}
}

func TestDataKeyReads(t *testing.T) {
	stored := vault.NewKey()
	s := store(t, map[string][]byte{"cus_key": wrap(t, "cus_key", stored), "cus_gone": nil}, noCreate(t))
	ctx := context.Background()
	for _, create := range []bool{false, true} {
		if k, err := s.DataKey(ctx, "shop_a", "cus_key", create); err != nil || !bytes.Equal(k, stored) {
			t.Errorf("stored key (create=%v): %v", create, err)
		}
		if k, err := s.DataKey(ctx, "shop_a", "cus_gone", create); !errors.Is(err, vault.ErrShredded) || k != nil {
			t.Errorf("tombstone (create=%v): %d-byte key, %v; want ErrShredded", create, len(k), err)
		}
		if _, err := s.DataKey(ctx, "shop_lookup_fails", "cus_key", create); !errors.Is(err, errBoom) {
			t.Errorf("failed look-up (create=%v): %v, want it wrapped", create, err)
		}
		if _, err := s.DataKey(ctx, "shop_a", "", create); !errors.Is(err, vault.ErrInvalidID) {
			t.Errorf("empty subject (create=%v): %v, want ErrInvalidID", create, err)
		}
	}
	if k, err := s.DataKey(ctx, "shop_a", "cus_none", false); !errors.Is(err, vault.ErrNotFound) || k != nil {
		t.Errorf("missing key: %d-byte key, %v; want ErrNotFound", len(k), err)
	}
	// A key stored under another subject's name does not unwrap.
	s = store(t, map[string][]byte{"cus_moved": wrap(t, "cus_key", stored)}, noCreate(t))
	if _, err := s.DataKey(ctx, "shop_a", "cus_moved", false); !errors.Is(err, vault.ErrUnwrap) {
		t.Errorf("moved key: %v, want ErrUnwrap", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.DataKey(canceled, "shop_a", "cus_none", true); !errors.Is(err, context.Canceled) {
		t.Errorf("done ctx: %v, want context.Canceled", err)
	}
}

func TestDataKeyCreates(t *testing.T) {
	ctx := context.Background()
	other := vault.NewKey()
	for _, tc := range []struct {
		name   string
		commit func(t *testing.T, r wrapstore.CreateRequest) (wrapstore.CreateResult, error)
		want   func(t *testing.T, key []byte, fresh *[]byte, err error)
	}{
		{
			name: "Inserted",
			commit: func(t *testing.T, r wrapstore.CreateRequest) (wrapstore.CreateResult, error) {
				return wrapstore.CreateResult{Wrapped: r.Fresh, Inserted: true}, nil
			},
			want: func(t *testing.T, key []byte, fresh *[]byte, err error) {
				if err != nil {
					t.Fatal(err)
				}
				// The caller's key is the one wrapped in its request.
				if k, err := vault.Unwrap(master, "shop_a", "cus_new", *fresh); err != nil || !bytes.Equal(k, key) {
					t.Fatalf("returned key is not the one queued (%v)", err)
				}
			},
		},
		{
			name: "LostToAnotherCreator",
			commit: func(t *testing.T, r wrapstore.CreateRequest) (wrapstore.CreateResult, error) {
				return wrapstore.CreateResult{Wrapped: wrap(t, "cus_new", other)}, nil
			},
			want: func(t *testing.T, key []byte, _ *[]byte, err error) {
				if err != nil || !bytes.Equal(key, other) {
					t.Fatalf("got %d-byte key, %v; want the other creator's key", len(key), err)
				}
			},
		},
		{
			name: "ShreddedMeanwhile",
			commit: func(t *testing.T, r wrapstore.CreateRequest) (wrapstore.CreateResult, error) {
				return wrapstore.CreateResult{Shredded: true}, nil
			},
			want: func(t *testing.T, key []byte, _ *[]byte, err error) {
				if !errors.Is(err, vault.ErrShredded) || key != nil {
					t.Fatalf("got %d-byte key, %v; want ErrShredded", len(key), err)
				}
			},
		},
		{
			name: "CommitFails",
			commit: func(t *testing.T, r wrapstore.CreateRequest) (wrapstore.CreateResult, error) {
				return wrapstore.CreateResult{}, errBoom
			},
			want: func(t *testing.T, key []byte, _ *[]byte, err error) {
				if !errors.Is(err, errBoom) || key != nil {
					t.Fatalf("got %d-byte key, %v; want the commit's error", len(key), err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fresh []byte
			s := store(t, nil, func(r wrapstore.CreateRequest) (wrapstore.CreateResult, error) {
				if r.Shop != "shop_a" || r.Subject != "cus_new" {
					t.Errorf("request for %s/%s", r.Shop, r.Subject)
				}
				fresh = r.Fresh
				return tc.commit(t, r)
			})
			key, err := s.DataKey(ctx, "shop_a", "cus_new", true)
			tc.want(t, key, &fresh, err)
		})
	}
}

func TestDataKeyAfterClose(t *testing.T) {
	s := store(t, nil, noCreate(t))
	s.Creates.Close()
	if _, err := s.DataKey(context.Background(), "shop_a", "cus_new", true); !errors.Is(err, batch.ErrClosed) {
		t.Fatalf("create after Close: %v, want ErrClosed", err)
	}
	if _, err := s.DataKey(context.Background(), "shop_a", "cus_new", false); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("read after Close: %v, want ErrNotFound", err)
	}
}
