package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// MasterKeySize is the size in bytes of the master key that wraps every data
// key (AES-256).
const MasterKeySize = 32

// MaxIDLen is the longest shop or subject id, in bytes, a vault accepts.
const MaxIDLen = 255

// WrappedSize is the length of a wrapped data key in the current format:
// version byte, 12-byte nonce, 32-byte ciphertext, 16-byte tag.
const WrappedSize = 1 + 12 + KeySize + 16

// wrapVersion1 is the first byte of every wrapped key and master check made
// by this code. A later format gets a new byte; Unwrap keeps reading the old.
const wrapVersion1 byte = 1

// Labels that separate the two uses of the master key in the AAD, so that a
// master check can never be passed off as a wrapped key or the reverse.
const (
	labelDataKey     = "cgp/vault/data-key"
	labelMasterCheck = "cgp/vault/master-check"
)

// ErrInvalidID is returned for an empty, over-long or malformed shop or
// subject id (see ValidateID).
var ErrInvalidID = errors.New("invalid vault id")

// ErrInvalidMasterKey is returned for a master key that is not
// MasterKeySize bytes, or a master key text that cannot be parsed.
var ErrInvalidMasterKey = errors.New("invalid master key")

// ErrWrongMasterKey is returned when a vault's stored check value does not
// open with the configured master key: the key is not the one the vault was
// created with.
var ErrWrongMasterKey = errors.New("master key does not match this vault")

// ErrUnwrap is returned when a wrapped key cannot be opened: the master key
// is wrong, the wrapped key belongs to another shop or subject, it was
// altered, or its format is unknown.
var ErrUnwrap = errors.New("cannot unwrap data key")

// NewKey returns a new random data key of KeySize bytes from crypto/rand.
func NewKey() []byte {
	k := make([]byte, KeySize)
	// crypto/rand.Read never returns an error: it crashes the program when
	// the operating system cannot supply randomness.
	_, _ = rand.Read(k)
	return k
}

// ValidateID checks a shop and a subject id: each must be 1 to MaxIDLen
// bytes of valid UTF-8 without NUL, so that every adapter can store it as
// text. The error wraps ErrInvalidID.
func ValidateID(shop, subject string) error {
	if err := validateOne("shop", shop); err != nil {
		return err
	}
	return validateOne("subject", subject)
}

// ValidateMasterKey checks that master is MasterKeySize bytes, as Wrap and
// the adapters' configs need. The error wraps ErrInvalidMasterKey.
func ValidateMasterKey(master []byte) error {
	if len(master) != MasterKeySize {
		return fmt.Errorf("%w: %d bytes, want %d", ErrInvalidMasterKey, len(master), MasterKeySize)
	}
	return nil
}

// ValidateShop checks a shop id alone, as ValidateID does.
func ValidateShop(shop string) error { return validateOne("shop", shop) }

func validateOne(what, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty %s", ErrInvalidID, what)
	case len(id) > MaxIDLen:
		return fmt.Errorf("%w: %s longer than %d bytes", ErrInvalidID, what, MaxIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidID, what)
	}
	for i := 0; i < len(id); i++ {
		if id[i] == 0 {
			return fmt.Errorf("%w: %s contains NUL", ErrInvalidID, what)
		}
	}
	return nil
}

// Wrap encrypts a data key with the master key for one (shop, subject) with
// AES-256-GCM under a random nonce. The shop and subject are bound as
// additional data: the result unwraps only for the same pair. Format:
// version byte (1) | nonce (12) | ciphertext (32) | tag (16).
func Wrap(master []byte, shop, subject string, key []byte) ([]byte, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("wrap data key: key is %d bytes, want %d", len(key), KeySize)
	}
	if err := ValidateID(shop, subject); err != nil {
		return nil, fmt.Errorf("wrap data key: %w", err)
	}
	aead, err := newAEAD(master)
	if err != nil {
		return nil, fmt.Errorf("wrap data key: %w", err)
	}
	out := make([]byte, 1, WrappedSize)
	out[0] = wrapVersion1
	return aead.Seal(out, nil, key, additionalData(wrapVersion1, labelDataKey, shop, subject)), nil
}

// Unwrap decrypts a data key made by Wrap for the same master key, shop and
// subject. Any mismatch or alteration gives an error wrapping ErrUnwrap.
func Unwrap(master []byte, shop, subject string, wrapped []byte) ([]byte, error) {
	if err := ValidateID(shop, subject); err != nil {
		return nil, fmt.Errorf("unwrap data key: %w", err)
	}
	aead, err := newAEAD(master)
	if err != nil {
		return nil, fmt.Errorf("unwrap data key: %w", err)
	}
	if len(wrapped) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrUnwrap)
	}
	if wrapped[0] != wrapVersion1 {
		return nil, fmt.Errorf("%w: unknown format version %d", ErrUnwrap, wrapped[0])
	}
	if len(wrapped) != WrappedSize {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrUnwrap, len(wrapped), WrappedSize)
	}
	key, err := aead.Open(make([]byte, 0, KeySize), nil, wrapped[1:], additionalData(wrapVersion1, labelDataKey, shop, subject))
	if err != nil {
		return nil, fmt.Errorf("%w: wrong master key, moved or altered", ErrUnwrap)
	}
	return key, nil
}

// NewMasterCheck returns a check value for the master key, which an adapter
// stores once when it creates a vault and passes to VerifyMasterCheck on
// every open, so that a wrong master key is refused at once rather than on
// the first unwrap. It reveals nothing about the key.
func NewMasterCheck(master []byte) ([]byte, error) {
	aead, err := newAEAD(master)
	if err != nil {
		return nil, fmt.Errorf("make master check: %w", err)
	}
	out := []byte{wrapVersion1}
	return aead.Seal(out, nil, nil, additionalData(wrapVersion1, labelMasterCheck, "", "")), nil
}

// VerifyMasterCheck reports whether check was made by NewMasterCheck with
// this master key; if not, the error wraps ErrWrongMasterKey.
func VerifyMasterCheck(master, check []byte) error {
	aead, err := newAEAD(master)
	if err != nil {
		return fmt.Errorf("verify master key: %w", err)
	}
	if len(check) == 0 || check[0] != wrapVersion1 {
		return fmt.Errorf("%w: unknown check format", ErrWrongMasterKey)
	}
	if _, err := aead.Open(nil, nil, check[1:], additionalData(wrapVersion1, labelMasterCheck, "", "")); err != nil {
		return ErrWrongMasterKey
	}
	return nil
}

func newAEAD(master []byte) (cipher.AEAD, error) {
	if err := ValidateMasterKey(master); err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(master)
	if err != nil {
		return nil, fmt.Errorf("aes: %w", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("gcm: %w", err)
	}
	return aead, nil
}

// additionalData binds the format version, the use, the shop and the
// subject, each length-prefixed so that no two pairs share an encoding
// ("ab","c" differs from "a","bc").
func additionalData(version byte, label, shop, subject string) []byte {
	ad := make([]byte, 0, 1+3*2+len(label)+len(shop)+len(subject))
	ad = append(ad, version)
	for _, s := range [...]string{label, shop, subject} {
		ad = binary.BigEndian.AppendUint16(ad, uint16(len(s)))
		ad = append(ad, s...)
	}
	return ad
}
