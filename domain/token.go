package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// Token environments.
const (
	EnvLive = "live"
	EnvTest = "test"
)

// AdminTokenPrefix starts every admin token.
const AdminTokenPrefix = "copt_"

// tokenBodyLen is the length of the random base62 body of a token.
const tokenBodyLen = 32

// TokenIssued: an admin API token was created. Only its SHA-256 is kept.
type TokenIssued struct {
	TokenID     string    `json:"token_id"`
	ShopID      string    `json:"shop_id"`
	Name        string    `json:"name"`
	Scopes      []Scope   `json:"scopes"`
	Environment string    `json:"environment"`
	Hash        string    `json:"hash"` // hex SHA-256 of the raw token
	CreatedAt   time.Time `json:"created_at"`
}

// EventType implements Event.
func (TokenIssued) EventType() string { return "TokenIssued" }

// NewAdminToken returns a fresh raw token for env ("live" or "test").
func NewAdminToken(env string) (string, error) {
	if env != EnvLive && env != EnvTest {
		return "", Invalid("environment", "environment must be live or test")
	}
	return AdminTokenPrefix + env + "_" + RandomBase62(tokenBodyLen), nil
}

// ParseAdminToken checks the syntax of a raw admin token and returns its
// environment. It does not look the token up.
func ParseAdminToken(raw string) (env string, ok bool) {
	rest, found := strings.CutPrefix(raw, AdminTokenPrefix)
	if !found {
		return "", false
	}
	env, body, found := strings.Cut(rest, "_")
	if !found || (env != EnvLive && env != EnvTest) || len(body) != tokenBodyLen {
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

// HashToken returns the hex SHA-256 of a raw token, the only form stored.
func HashToken(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// IssueToken decides the creation of an admin token for shop.
func IssueToken(shop *Shop, tokenID, name string, scopes []string, env string, raw string, now time.Time) (*TokenIssued, error) {
	if !shop.Exists {
		return nil, NotFound("shop")
	}
	parsed, err := ParseAdminScopes(scopes)
	if err != nil {
		return nil, err
	}
	if e, ok := ParseAdminToken(raw); !ok || e != env {
		return nil, Invalid("token", "malformed token")
	}
	name = strings.TrimSpace(name)
	if len(name) > 200 {
		return nil, Invalid("name", "name must be at most 200 characters")
	}
	return &TokenIssued{
		TokenID: tokenID, ShopID: shop.ID, Name: name, Scopes: parsed,
		Environment: env, Hash: HashToken(raw), CreatedAt: now.UTC(),
	}, nil
}
