package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Password hashing of the admin interface's users: argon2id (RFC 9106)
// with OWASP's recommended minimum parameter set — 19 MiB of memory, two
// passes, one lane — a 16-byte random salt and a 32-byte key, encoded as
// a PHC string:
//
//	$argon2id$v=19$m=19456,t=2,p=1$<salt, base64 without padding>$<key, same>
//
// The parameters are stored with each hash, so a stronger set later still
// verifies the hashes made with this one.
const (
	PasswordMemoryKiB  = 19 * 1024
	PasswordIterations = 2
	PasswordThreads    = 1
	passwordSaltLen    = 16
	passwordKeyLen     = 32
	// MinPasswordLength and MaxPasswordLength bound a password, in bytes
	// (the maximum bounds the work an attacker can ask of the hash).
	MinPasswordLength = 12
	MaxPasswordLength = 1024
)

// PasswordHash is a parsed PHC string of argon2id.
type PasswordHash struct {
	MemoryKiB  uint32
	Iterations uint32
	Threads    uint8
	Salt       []byte
	Key        []byte
}

// ErrBadHash reports a string that is not an argon2id PHC string this
// package accepts.
var ErrBadHash = errors.New("not an argon2id password hash")

// CheckPassword refuses a password outside the length bounds.
func CheckPassword(password string) error {
	if len(password) < MinPasswordLength || len(password) > MaxPasswordLength {
		return fmt.Errorf("a password must be %d to %d bytes long", MinPasswordLength, MaxPasswordLength)
	}
	return nil
}

// HashPassword hashes a password with the package's parameters and a
// fresh salt, and returns its PHC string.
func HashPassword(password string) (string, error) {
	if err := CheckPassword(password); err != nil {
		return "", err
	}
	salt := make([]byte, passwordSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	h := PasswordHash{MemoryKiB: PasswordMemoryKiB, Iterations: PasswordIterations, Threads: PasswordThreads, Salt: salt}
	h.Key = h.derive(password, passwordKeyLen)
	return h.String(), nil
}

func (h PasswordHash) derive(password string, n int) []byte {
	return argon2.IDKey([]byte(password), h.Salt, h.Iterations, h.MemoryKiB, h.Threads, uint32(n))
}

// String is the PHC string of h.
func (h PasswordHash) String() string {
	b := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, h.MemoryKiB, h.Iterations, h.Threads,
		b.EncodeToString(h.Salt), b.EncodeToString(h.Key))
}

// Bounds of a parsed hash: a stored hash never asks for more than 256 MiB
// or 10 passes, whatever the string says.
const (
	maxHashMemoryKiB  = 256 * 1024
	maxHashIterations = 10
	maxHashThreads    = 16
)

// ParseHash parses an argon2id PHC string (version 19), refusing
// parameters outside sane bounds.
func ParseHash(s string) (PasswordHash, error) {
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return PasswordHash{}, ErrBadHash
	}
	var h PasswordHash
	params := strings.Split(parts[3], ",")
	if len(params) != 3 {
		return PasswordHash{}, ErrBadHash
	}
	for i, name := range []string{"m=", "t=", "p="} {
		v, ok := strings.CutPrefix(params[i], name)
		if !ok || v == "" || (len(v) > 1 && v[0] == '0') {
			return PasswordHash{}, ErrBadHash
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return PasswordHash{}, ErrBadHash
		}
		switch i {
		case 0:
			h.MemoryKiB = uint32(n)
		case 1:
			h.Iterations = uint32(n)
		case 2:
			if n > maxHashThreads {
				return PasswordHash{}, ErrBadHash
			}
			h.Threads = uint8(n)
		}
	}
	if h.Threads < 1 || h.Iterations < 1 || h.Iterations > maxHashIterations ||
		h.MemoryKiB < 8*uint32(h.Threads) || h.MemoryKiB > maxHashMemoryKiB {
		return PasswordHash{}, ErrBadHash
	}
	var err error
	if h.Salt, err = base64.RawStdEncoding.Strict().DecodeString(parts[4]); err != nil || len(h.Salt) < 8 || len(h.Salt) > 64 {
		return PasswordHash{}, ErrBadHash
	}
	if h.Key, err = base64.RawStdEncoding.Strict().DecodeString(parts[5]); err != nil || len(h.Key) < 16 || len(h.Key) > 64 {
		return PasswordHash{}, ErrBadHash
	}
	return h, nil
}

// VerifyPassword reports whether password matches the PHC string
// encoded, comparing the keys in constant time. A malformed hash never
// matches.
func VerifyPassword(encoded, password string) bool {
	h, err := ParseHash(encoded)
	if err != nil || len(password) > MaxPasswordLength {
		return false
	}
	return subtle.ConstantTimeCompare(h.derive(password, len(h.Key)), h.Key) == 1
}

// dummyHash is verified against when a sign-in names an unknown user, so
// an unknown e-mail takes as long as a wrong password.
var dummyHash = func() string {
	h := PasswordHash{MemoryKiB: PasswordMemoryKiB, Iterations: PasswordIterations, Threads: PasswordThreads,
		Salt: make([]byte, passwordSaltLen)}
	h.Key = h.derive("cgp dummy password", passwordKeyLen)
	return h.String()
}()

// VerifyNobody spends the time of one verification and returns false: the
// answer for a sign-in that names no known user.
func VerifyNobody(password string) bool {
	VerifyPassword(dummyHash, password)
	return false
}
