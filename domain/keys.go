package domain

import (
	"strings"
	"time"
)

// Key prefixes of the other credentials.
const (
	PublicKeyPrefix = "pk_"
	ImageKeyPrefix  = "cik_"
	PrefixPublicKey = "pkk_" // id of a public key record
	PrefixImageKey  = "cik_id_"
)

// keyBodyLen is the random base62 body of every generated credential.
const keyBodyLen = 32

// NewCredential returns prefix + env + "_" + 32 random base62 characters.
func NewCredential(prefix, env string) (string, error) {
	if env != EnvLive && env != EnvTest {
		return "", Invalid("environment", "environment must be live or test")
	}
	return prefix + env + "_" + RandomBase62(keyBodyLen), nil
}

// ParseCredential checks the syntax prefix + (live|test) + "_" + 32 base62
// characters and returns the environment.
func ParseCredential(prefix, raw string) (env string, ok bool) {
	rest, found := strings.CutPrefix(raw, prefix)
	if !found {
		return "", false
	}
	env, body, found := strings.Cut(rest, "_")
	if !found || (env != EnvLive && env != EnvTest) || len(body) != keyBodyLen {
		return "", false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", false
		}
	}
	return env, true
}

// MasterTokenIssued: an account-level admin token that may mint tokens for
// any shop of the account (enterprise accounts).
type MasterTokenIssued struct {
	TokenID     string    `json:"token_id"`
	AccountID   string    `json:"account_id"`
	Name        string    `json:"name"`
	Environment string    `json:"environment"`
	Hash        string    `json:"hash"`
	CreatedAt   time.Time `json:"created_at"`
}

// EventType implements Event.
func (MasterTokenIssued) EventType() string { return "MasterTokenIssued" }

// TokenRotated: the token got a new secret; the old one stopped working
// when this event was committed. The id, name and scopes stay.
type TokenRotated struct {
	TokenID   string    `json:"token_id"`
	ShopID    string    `json:"shop_id,omitempty"`
	AccountID string    `json:"account_id,omitempty"`
	Hash      string    `json:"hash"`
	RotatedAt time.Time `json:"rotated_at"`
}

// EventType implements Event.
func (TokenRotated) EventType() string { return "TokenRotated" }

// TokenRevoked: the token stopped working for good.
type TokenRevoked struct {
	TokenID   string    `json:"token_id"`
	ShopID    string    `json:"shop_id,omitempty"`
	AccountID string    `json:"account_id,omitempty"`
	RevokedAt time.Time `json:"revoked_at"`
}

// EventType implements Event.
func (TokenRevoked) EventType() string { return "TokenRevoked" }

// ShopPlanChanged: the shop moved to another plan (admin action or the
// commerce platform's app_subscriptions/update).
type ShopPlanChanged struct {
	ShopID    string    `json:"shop_id"`
	Plan      Plan      `json:"plan"`
	ChangedAt time.Time `json:"changed_at"`
}

// EventType implements Event.
func (ShopPlanChanged) EventType() string { return "ShopPlanChanged" }

// PublicKeyIssued: a storefront key (pk_…) for headless storefronts.
type PublicKeyIssued struct {
	KeyID       string `json:"key_id"`
	ShopID      string `json:"shop_id"`
	Environment string `json:"environment"`
	Hash        string `json:"hash"`
	// Last4 are the key's last four characters, to tell keys apart in a
	// list (never the key); empty for keys issued before it was kept.
	Last4     string    `json:"last4,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// EventType implements Event.
func (PublicKeyIssued) EventType() string { return "PublicKeyIssued" }

// CredentialLast4 returns the last four characters of a raw credential,
// the hint lists show to tell keys apart.
func CredentialLast4(raw string) string {
	if len(raw) < 4 {
		return ""
	}
	return raw[len(raw)-4:]
}

// ImageKeyIssued: an image-operations API key (X-API-Key). Scopes holds
// the stored scope state exactly (see ImageScopes).
type ImageKeyIssued struct {
	KeyID     string      `json:"key_id"`
	ShopID    string      `json:"shop_id"`
	Hash      string      `json:"hash"`
	Scopes    ImageScopes `json:"scopes"`
	Imported  bool        `json:"imported,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
}

// EventType implements Event.
func (ImageKeyIssued) EventType() string { return "ImageKeyIssued" }

// ImageKeyRevoked: an image-API key stopped for good.
type ImageKeyRevoked struct {
	KeyID     string    `json:"key_id"`
	ShopID    string    `json:"shop_id"`
	RevokedAt time.Time `json:"revoked_at"`
}

// EventType implements Event.
func (ImageKeyRevoked) EventType() string { return "ImageKeyRevoked" }

// ImageKey is the image-API key aggregate.
type ImageKey struct {
	ID, ShopID, Hash string
	Exists, Revoked  bool
}

// Apply folds an event into the key.
func (k *ImageKey) Apply(e Event) {
	switch ev := e.(type) {
	case *ImageKeyIssued:
		k.ID, k.ShopID, k.Hash, k.Exists = ev.KeyID, ev.ShopID, ev.Hash, true
	case *ImageKeyRevoked:
		k.Revoked = true
	}
}

// Revoke decides the revocation of the key of shop: nil when it is
// revoked already; not found for a key of another shop.
func (k *ImageKey) Revoke(shopID string, now time.Time) (*ImageKeyRevoked, error) {
	switch {
	case !k.Exists || k.ShopID != shopID:
		return nil, NotFound("image key")
	case k.Revoked:
		return nil, nil
	}
	return &ImageKeyRevoked{KeyID: k.ID, ShopID: k.ShopID, RevokedAt: now.UTC()}, nil
}

// Token is the admin-token aggregate (shop tokens and master tokens).
type Token struct {
	ID          string
	ShopID      string
	AccountID   string
	Environment string
	Master      bool
	Exists      bool
	Revoked     bool
}

// Apply folds an event into the token.
func (t *Token) Apply(e Event) {
	switch ev := e.(type) {
	case *TokenIssued:
		t.ID, t.ShopID, t.Environment, t.Exists = ev.TokenID, ev.ShopID, ev.Environment, true
	case *MasterTokenIssued:
		t.ID, t.AccountID, t.Environment, t.Master, t.Exists = ev.TokenID, ev.AccountID, ev.Environment, true, true
	case *TokenRevoked:
		t.Revoked = true
	}
}

// Rotate decides a new secret for the token.
func (t *Token) Rotate(raw string, now time.Time) (*TokenRotated, error) {
	if !t.Exists {
		return nil, NotFound("token")
	}
	if t.Revoked {
		return nil, Conflict("token is revoked")
	}
	if _, ok := ParseAdminToken(raw); !ok {
		return nil, Invalid("token", "malformed token")
	}
	return &TokenRotated{TokenID: t.ID, ShopID: t.ShopID, AccountID: t.AccountID, Hash: HashToken(raw), RotatedAt: now.UTC()}, nil
}

// Revoke decides the revocation; revoking twice changes nothing.
func (t *Token) Revoke(now time.Time) (*TokenRevoked, error) {
	if !t.Exists {
		return nil, NotFound("token")
	}
	if t.Revoked {
		return nil, nil
	}
	return &TokenRevoked{TokenID: t.ID, ShopID: t.ShopID, AccountID: t.AccountID, RevokedAt: now.UTC()}, nil
}
