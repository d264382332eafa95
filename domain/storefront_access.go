package domain

import (
	"strings"
	"time"
)

// The shop's storefront access settings (issue 20, point 4): the CORS
// allow-list of origins whose pages may call the public endpoints with
// X-Shop-Domain, and the public keys (pk_…) of headless storefronts.

// MaxAllowedOrigins bounds a shop's CORS allow-list: each public request
// from a browser compares its origin with the list.
const MaxAllowedOrigins = 100

// PublicKeyStream is the stream of one public key.
func PublicKeyStream(id string) string { return "publickey-" + id }

// ShopOriginAllowed: an origin was added to the shop's CORS allow-list.
// Host is the origin's host, as the list keeps it (the scheme is always
// https, the port always the default).
type ShopOriginAllowed struct {
	ShopID  string    `json:"shop_id"`
	Host    string    `json:"host"`
	AddedAt time.Time `json:"added_at"`
}

// EventType implements Event.
func (ShopOriginAllowed) EventType() string { return "ShopOriginAllowed" }

// ShopOriginRemoved: an origin left the shop's CORS allow-list.
type ShopOriginRemoved struct {
	ShopID    string    `json:"shop_id"`
	Host      string    `json:"host"`
	RemovedAt time.Time `json:"removed_at"`
}

// EventType implements Event.
func (ShopOriginRemoved) EventType() string { return "ShopOriginRemoved" }

// PublicKeyRotated: the public key got a new secret; the old one stopped
// working when this event was committed (no overlap, as admin tokens).
type PublicKeyRotated struct {
	KeyID     string    `json:"key_id"`
	ShopID    string    `json:"shop_id"`
	Hash      string    `json:"hash"`
	Last4     string    `json:"last4,omitempty"`
	RotatedAt time.Time `json:"rotated_at"`
}

// EventType implements Event.
func (PublicKeyRotated) EventType() string { return "PublicKeyRotated" }

// PublicKeyRevoked: the public key stopped working for good.
type PublicKeyRevoked struct {
	KeyID     string    `json:"key_id"`
	ShopID    string    `json:"shop_id"`
	RevokedAt time.Time `json:"revoked_at"`
}

// EventType implements Event.
func (PublicKeyRevoked) EventType() string { return "PublicKeyRevoked" }

func storefrontAccessEvents() []EventSpec {
	return []EventSpec{
		{Name: "ShopOriginAllowed", Version: 1, New: func() Event { return &ShopOriginAllowed{} }},
		{Name: "ShopOriginRemoved", Version: 1, New: func() Event { return &ShopOriginRemoved{} }},
		{Name: "PublicKeyRotated", Version: 1, New: func() Event { return &PublicKeyRotated{} }},
		{Name: "PublicKeyRevoked", Version: 1, New: func() Event { return &PublicKeyRevoked{} }},
	}
}

// OriginHost returns the lowercased host of an origin that may be
// admitted, "" otherwise. It is the one origin rule of the public
// surface, for an Origin header at request time and for an origin added
// to an allow-list. Only an https origin is admitted (a page served over
// plain http can be altered on the way), written as the Fetch standard
// serializes one: "https://" and a host, with no user information, path,
// query or fragment. An explicit ":443" is the default port of https, so
// the same origin, and is admitted; any other port is another origin and
// is refused. The host is then compared exactly with the shop's domain
// and its allow-list.
func OriginHost(origin string) string {
	if len(origin) > 300 {
		return ""
	}
	rest, ok := strings.CutPrefix(origin, "https://")
	if !ok {
		return ""
	}
	host, port, hasPort := strings.Cut(rest, ":")
	if hasPort && port != "443" {
		return ""
	}
	if host == "" || host[0] == '.' || host[0] == '-' || strings.HasSuffix(host, ".") {
		return ""
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return "" // user information, a path, a query, an IPv6 literal, an escape
		}
	}
	return strings.ToLower(host)
}

// ParseAllowedOrigin checks an origin given to be added to an allow-list
// and returns its host: OriginHost's rule (https, a bare host, no port
// but 443), and the host a public DNS name (ValidDomain: no IP address,
// no local name). Field names the input in the error.
func ParseAllowedOrigin(field, origin string) (string, error) {
	host := OriginHost(strings.TrimSpace(origin))
	if host == "" {
		return "", Invalid(field, "an origin is https:// and a host, without user information, path, query or port (other than 443), such as https://shop.example.com")
	}
	if !ValidDomain(host) {
		return "", Invalid(field, "the origin's host must be a public DNS name, not an IP address or a local name")
	}
	return host, nil
}

// AllowedOrigins is the shop's CORS allow-list (hosts), in the order
// they were added.
func (s *Shop) AllowedOrigins() []string { return s.allowed }

// AllowOrigin decides the addition of an origin to the allow-list. An
// origin already on it changes nothing (nil event).
func (s *Shop) AllowOrigin(origin string, now time.Time) (*ShopOriginAllowed, error) {
	if !s.Exists {
		return nil, NotFound("shop")
	}
	host, err := ParseAllowedOrigin("origin", origin)
	if err != nil {
		return nil, err
	}
	for _, h := range s.allowed {
		if h == host {
			return nil, nil
		}
	}
	if len(s.allowed) >= MaxAllowedOrigins {
		return nil, Invalid("origin", "the allow-list holds at most %d origins", MaxAllowedOrigins)
	}
	return &ShopOriginAllowed{ShopID: s.ID, Host: host, AddedAt: now.UTC()}, nil
}

// RemoveOrigin decides the removal of an origin (an https origin or its
// bare host) from the allow-list; one not on it is not found.
func (s *Shop) RemoveOrigin(origin string, now time.Time) (*ShopOriginRemoved, error) {
	if !s.Exists {
		return nil, NotFound("shop")
	}
	host := strings.ToLower(strings.TrimSpace(origin))
	if strings.Contains(host, "://") {
		host = OriginHost(strings.TrimSpace(origin))
	}
	for _, h := range s.allowed {
		if h == host && host != "" {
			return &ShopOriginRemoved{ShopID: s.ID, Host: host, RemovedAt: now.UTC()}, nil
		}
	}
	return nil, NotFound("allowed origin")
}

func (s *Shop) applyOrigins(e Event) {
	switch ev := e.(type) {
	case *ShopCreated:
		s.allowed = append([]string(nil), ev.CORSAllowList...)
	case *ShopOriginAllowed:
		s.allowed = append(s.allowed, ev.Host)
	case *ShopOriginRemoved:
		kept := s.allowed[:0]
		for _, h := range s.allowed {
			if h != ev.Host {
				kept = append(kept, h)
			}
		}
		s.allowed = kept
	}
}

// PublicKey is the public-key aggregate. Hash is the SHA-256 of the
// secret that works now (never shown).
type PublicKey struct {
	ID          string
	ShopID      string
	Environment string
	Hash        string
	Last4       string
	Exists      bool
	Revoked     bool
	CreatedAt   time.Time
	// RotatedAt and RevokedAt are zero when the key was not.
	RotatedAt, RevokedAt time.Time
}

// Apply folds an event into the key.
func (k *PublicKey) Apply(e Event) {
	switch ev := e.(type) {
	case *PublicKeyIssued:
		k.ID, k.ShopID, k.Environment, k.Hash, k.Last4, k.CreatedAt, k.Exists = ev.KeyID, ev.ShopID, ev.Environment, ev.Hash, ev.Last4, ev.CreatedAt, true
	case *PublicKeyRotated:
		k.Hash, k.Last4, k.RotatedAt = ev.Hash, ev.Last4, ev.RotatedAt
	case *PublicKeyRevoked:
		k.Revoked, k.RevokedAt = true, ev.RevokedAt
	}
}

// Rotate decides a new secret for the key: raw is the new pk_… value.
func (k *PublicKey) Rotate(raw string, now time.Time) (*PublicKeyRotated, error) {
	if !k.Exists {
		return nil, NotFound("public key")
	}
	if k.Revoked {
		return nil, Conflict("public key is revoked")
	}
	if _, ok := ParseCredential(PublicKeyPrefix, raw); !ok {
		return nil, Invalid("token", "malformed public key")
	}
	return &PublicKeyRotated{KeyID: k.ID, ShopID: k.ShopID, Hash: HashToken(raw), Last4: CredentialLast4(raw), RotatedAt: now.UTC()}, nil
}

// Revoke decides the revocation; revoking twice changes nothing.
func (k *PublicKey) Revoke(now time.Time) (*PublicKeyRevoked, error) {
	if !k.Exists {
		return nil, NotFound("public key")
	}
	if k.Revoked {
		return nil, nil
	}
	return &PublicKeyRevoked{KeyID: k.ID, ShopID: k.ShopID, RevokedAt: now.UTC()}, nil
}
