package vault_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cgp-platform/cgp/vault"
	"github.com/cgp-platform/cgp/vault/sqlite"
)

// Example wires a vault as the binary does: a master key from a private key
// file, the embedded SQLite adapter, and a cache in front. It then erases a
// customer by shredding the customer's key.
func Example() {
	dir, err := os.MkdirTemp("", "vault-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	master, err := vault.LoadOrCreateKeyFile(filepath.Join(dir, "master.key"))
	if err != nil {
		fmt.Println(err)
		return
	}
	store, err := sqlite.Open(sqlite.Config{Path: filepath.Join(dir, "vault.db"), MasterKey: master})
	if err != nil {
		fmt.Println(err)
		return
	}
	v := vault.NewCache(store, 10_000)
	defer v.Close()

	ctx := context.Background()
	key, err := v.DataKey(ctx, "shop_1", "cus_1", true)
	if err != nil {
		fmt.Println(err)
		return
	}
	again, _ := v.DataKey(ctx, "shop_1", "cus_1", false)
	fmt.Println("key bytes:", len(key), "stable:", bytes.Equal(key, again))

	_, err = v.DataKey(ctx, "shop_1", "cus_2", false)
	fmt.Println("unknown customer:", errors.Is(err, vault.ErrNotFound))

	// customers/redact: the customer's data, encrypted with key, is gone.
	if err := v.Shred(ctx, "shop_1", "cus_1"); err != nil {
		fmt.Println(err)
		return
	}
	_, err = v.DataKey(ctx, "shop_1", "cus_1", true)
	fmt.Println("after shred:", errors.Is(err, vault.ErrShredded))
	// Output:
	// key bytes: 32 stable: true
	// unknown customer: true
	// after shred: true
}

// ExampleWrap shows that a wrapped key opens only for the shop and subject
// it was wrapped for.
func ExampleWrap() {
	master, err := vault.ParseMasterKey("d2hhdCBhIHNlY3JldCBtYXN0ZXIga2V5IHRoaXMgaXM=")
	if err != nil {
		fmt.Println(err)
		return
	}
	key := vault.NewKey()
	wrapped, err := vault.Wrap(master, "shop_1", "cus_1", key)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("wrapped bytes:", len(wrapped))

	back, err := vault.Unwrap(master, "shop_1", "cus_1", wrapped)
	fmt.Println("same subject:", err == nil && bytes.Equal(back, key))

	_, err = vault.Unwrap(master, "shop_1", "cus_2", wrapped)
	fmt.Println("moved to another subject:", errors.Is(err, vault.ErrUnwrap))
	// Output:
	// wrapped bytes: 61
	// same subject: true
	// moved to another subject: true
}
