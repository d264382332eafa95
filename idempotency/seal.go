package idempotency

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// Sealer seals stored response bodies (they may hold a secret shown once:
// a token, a signing secret) and opens them for a replay.
type Sealer interface {
	Seal(plain []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// sealPrefix starts every sealed body: a body stored before sealing was
// on (without it) replays as it is.
var sealPrefix = []byte("cgpseal1:")

// aeadSealer seals with AES-256-GCM and a random nonce.
type aeadSealer struct{ aead cipher.AEAD }

// NewSealer returns a Sealer with the 32-byte key.
func NewSealer(key []byte) (Sealer, error) {
	if len(key) != 32 {
		return nil, errors.New("idempotency sealer: the key must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("idempotency sealer: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("idempotency sealer: %w", err)
	}
	return aeadSealer{aead: aead}, nil
}

func (s aeadSealer) Seal(plain []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal stored answer: %w", err)
	}
	out := append(append([]byte(nil), sealPrefix...), nonce...)
	return s.aead.Seal(out, nonce, plain, sealPrefix), nil
}

func (s aeadSealer) Open(sealed []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(sealed, sealPrefix)
	if !ok {
		return sealed, nil
	}
	n := s.aead.NonceSize()
	if len(rest) < n {
		return nil, errors.New("open stored answer: too short")
	}
	plain, err := s.aead.Open(nil, rest[:n], rest[n:], sealPrefix)
	if err != nil {
		return nil, fmt.Errorf("open stored answer: %w", err)
	}
	return plain, nil
}
