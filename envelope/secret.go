package envelope

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/cgp-platform/cgp/vault"
)

// secretPrefix starts a secret sealed for a read model:
// "sec1:<base64url(nonce|ciphertext)>".
const secretPrefix = "sec1:"

// SealSecret seals a secret of shop (a webhook, app or signing secret)
// for a read-model column, with the shop's key, bound to the shop and to
// label (the column: "shops.webhook_secret"). The read models then hold
// no secret in clear: a copy of readmodels.db, its WAL or a backup gives
// nothing without the key vault, and shredding the shop's key makes them
// unreadable like the log. The receiver that verifies signatures opens
// it on use with OpenSecret (the shop key is cached by the vault cache).
//
// Sealing is deterministic (the nonce is derived from the key, the label
// and the secret, as in SIV): the same secret gives the same column
// value, so a replayed read model equals the incrementally built one row
// for row. It only tells whether two sealed values hold the same secret.
// An empty secret stays empty.
func (c *Codec) SealSecret(ctx context.Context, shop, label, secret string) (string, error) {
	if secret == "" {
		return "", nil
	}
	key, err := c.keys.DataKey(ctx, tenant(shop), shopSubject(shop), false)
	if err != nil {
		if errors.Is(err, vault.ErrShredded) {
			return "", erasedShop(err)
		}
		return "", fmt.Errorf("seal secret %s: shop key: %w", label, err)
	}
	gcm, err := newGCM(key)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, secretNonceKey(key))
	mac.Write([]byte(label))
	mac.Write([]byte{0})
	mac.Write([]byte(secret))
	nonce := mac.Sum(nil)[:gcm.NonceSize()]
	out := gcm.Seal(append([]byte(nil), nonce...), nonce, []byte(secret), secretAAD(shop, label))
	return secretPrefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// OpenSecret returns the secret SealSecret sealed. A value without the
// sealed form's prefix is returned as is: a read model built before
// secrets were sealed (cgp replay rebuilds it sealed). A shredded shop key
// returns ErrShopErased.
func (c *Codec) OpenSecret(ctx context.Context, shop, label, sealed string) (string, error) {
	rest, ok := strings.CutPrefix(sealed, secretPrefix)
	if !ok {
		return sealed, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return "", fmt.Errorf("open secret %s: %w", label, err)
	}
	key, err := c.keys.DataKey(ctx, tenant(shop), shopSubject(shop), false)
	if err != nil {
		if errors.Is(err, vault.ErrShredded) {
			return "", erasedShop(err)
		}
		return "", fmt.Errorf("open secret %s: shop key: %w", label, err)
	}
	plain, err := open(key, raw, secretAAD(shop, label))
	if err != nil {
		return "", fmt.Errorf("open secret %s: %w", label, err)
	}
	return string(plain), nil
}

// secretNonceKey derives the key of the nonces from the shop key, so the
// same key is not used by two primitives.
func secretNonceKey(key []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("cgp read-model secret nonce v1"))
	return mac.Sum(nil)
}

func secretAAD(shop, label string) []byte {
	return []byte(secretPrefix + shop + "\x00" + label)
}
