package commands

import (
	"context"

	"github.com/cgp-platform/cgp/domain"
)

// AllowOrigin adds an https origin to a shop's CORS allow-list.
type AllowOrigin struct {
	ShopID string
	Origin string
}

// AllowedOrigin is the result of AllowOrigin and RemoveOrigin: the host
// the list keeps, and whether the list changed.
type AllowedOrigin struct {
	Result
	Host    string
	Changed bool
}

// AllowOrigin runs the command. An origin already on the list changes
// nothing. Beside domain.ParseAllowedOrigin's rule, the host must be
// registrable (not a public suffix, as the shop's own domain).
func (h *Handler) AllowOrigin(ctx context.Context, cmd AllowOrigin, meta Meta) (AllowedOrigin, error) {
	host, err := domain.ParseAllowedOrigin("origin", cmd.Origin)
	if err != nil {
		return AllowedOrigin{}, err
	}
	if err := registrable("origin", host); err != nil {
		return AllowedOrigin{}, err
	}
	var changed bool
	res, err := execute(ctx, h, cmd.ShopID, domain.ShopStream(cmd.ShopID), func() *domain.Shop { return &domain.Shop{} },
		func(s *domain.Shop) (decision, error) {
			ev, err := s.AllowOrigin(cmd.Origin, h.now())
			if err != nil || ev == nil {
				changed = false
				return decision{}, err
			}
			changed = true
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.ShopID
	return AllowedOrigin{Result: res, Host: host, Changed: changed}, err
}

// RemoveOrigin takes an origin (https://host, or the bare host) off a
// shop's CORS allow-list.
type RemoveOrigin struct {
	ShopID string
	Origin string
}

// RemoveOrigin runs the command. An origin not on the list is not found.
func (h *Handler) RemoveOrigin(ctx context.Context, cmd RemoveOrigin, meta Meta) (AllowedOrigin, error) {
	var host string
	res, err := execute(ctx, h, cmd.ShopID, domain.ShopStream(cmd.ShopID), func() *domain.Shop { return &domain.Shop{} },
		func(s *domain.Shop) (decision, error) {
			ev, err := s.RemoveOrigin(cmd.Origin, h.now())
			if err != nil {
				return decision{}, err
			}
			host = ev.Host
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.ShopID
	return AllowedOrigin{Result: res, Host: host, Changed: err == nil}, err
}

// PublicKeyChange is the result of RotatePublicKey and RevokePublicKey:
// the key as the change left it, the new raw key of a rotation (shown
// once) and the hash of the secret that stopped working.
type PublicKeyChange struct {
	Result
	Key     domain.PublicKey
	Token   string
	OldHash string
}

// RotatePublicKey gives a shop's public key a new secret; the old one
// stops working when the rotation is committed (no overlap: for a
// rollover without downtime, create a second key and revoke the first
// once the storefront uses the new one).
type RotatePublicKey struct {
	ShopID string
	KeyID  string
}

// RotatePublicKey runs the command. A key of another shop is not found; a
// revoked one is a conflict.
func (h *Handler) RotatePublicKey(ctx context.Context, cmd RotatePublicKey, meta Meta) (PublicKeyChange, error) {
	var out PublicKeyChange
	if !domain.HasPrefixID(cmd.KeyID, domain.PrefixPublicKey) {
		return out, domain.NotFound("public key")
	}
	res, err := execute(ctx, h, cmd.ShopID, domain.PublicKeyStream(cmd.KeyID), func() *domain.PublicKey { return &domain.PublicKey{} },
		func(k *domain.PublicKey) (decision, error) {
			if !k.Exists || k.ShopID != cmd.ShopID {
				return decision{}, domain.NotFound("public key")
			}
			raw, err := domain.NewCredential(domain.PublicKeyPrefix, k.Environment)
			if err != nil {
				return decision{}, err
			}
			ev, err := k.Rotate(raw, h.now())
			if err != nil {
				return decision{}, err
			}
			out.OldHash, out.Token = k.Hash, raw
			out.Key = *k
			out.Key.Apply(ev)
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.KeyID
	out.Result = res
	return out, err
}

// RevokePublicKey stops a shop's public key for good. Revoking twice
// changes nothing.
type RevokePublicKey struct {
	ShopID string
	KeyID  string
}

// RevokePublicKey runs the command. A key of another shop is not found.
func (h *Handler) RevokePublicKey(ctx context.Context, cmd RevokePublicKey, meta Meta) (PublicKeyChange, error) {
	var out PublicKeyChange
	if !domain.HasPrefixID(cmd.KeyID, domain.PrefixPublicKey) {
		return out, domain.NotFound("public key")
	}
	res, err := execute(ctx, h, cmd.ShopID, domain.PublicKeyStream(cmd.KeyID), func() *domain.PublicKey { return &domain.PublicKey{} },
		func(k *domain.PublicKey) (decision, error) {
			if !k.Exists || k.ShopID != cmd.ShopID {
				return decision{}, domain.NotFound("public key")
			}
			out.Key, out.OldHash = *k, k.Hash
			ev, err := k.Revoke(h.now())
			if err != nil || ev == nil {
				return decision{}, err
			}
			out.Key.Apply(ev)
			return decision{events: []domain.Event{ev}}, nil
		}, meta)
	res.ID = cmd.KeyID
	out.Result = res
	return out, err
}
