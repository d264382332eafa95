package vault

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// ErrInsecureKeyFile is returned by LoadOrCreateKeyFile for a key file that
// group or others may read or write, or that is not a regular file.
var ErrInsecureKeyFile = errors.New("insecure master key file")

// ParseMasterKey decodes a master key given as text: 32 bytes written as
// base64 (standard or URL alphabet, padded or not) or as 64 hex digits.
// Surrounding white space is ignored. The error wraps ErrInvalidMasterKey
// and never repeats the input.
func ParseMasterKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: empty; want %d bytes as base64 or hex (for example: openssl rand -base64 32)", ErrInvalidMasterKey, MasterKeySize)
	}
	if len(s) == 2*MasterKeySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		k, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(k) != MasterKeySize {
			return nil, fmt.Errorf("%w: decodes to %d bytes, want %d", ErrInvalidMasterKey, len(k), MasterKeySize)
		}
		return k, nil
	}
	return nil, fmt.Errorf("%w: %d characters that are neither base64 nor 64 hex digits; want %d bytes as base64 or hex (for example: openssl rand -base64 32)",
		ErrInvalidMasterKey, len(s), MasterKeySize)
}

// LoadOrCreateKeyFile returns the master key kept in the file at path. When
// the file does not exist it creates it with a new random key, written as
// base64 text with mode 0600; the file appears complete or not at all, and
// an existing file is never overwritten (two processes racing both end up
// with the key of the one that won). An existing file readable or writable
// by group or others is refused with an error wrapping ErrInsecureKeyFile.
// The directory must exist.
func LoadOrCreateKeyFile(path string) ([]byte, error) {
	key, err := readKeyFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := createKeyFile(path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return readKeyFile(path)
}

func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open master key file: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat master key file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrInsecureKeyFile, path)
	}
	// Windows has no Unix permission bits; its ACLs are the operator's job.
	if perm := info.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o, want 0600 or stricter (chmod 600 %s)", ErrInsecureKeyFile, path, perm, path)
	}
	// A key file is a few dozen bytes; refuse to slurp anything large.
	const limit = 1024
	buf, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read master key file: %w", err)
	}
	if len(buf) > limit {
		return nil, fmt.Errorf("%w: %s is too large to be a key file", ErrInvalidMasterKey, path)
	}
	if len(buf) == MasterKeySize {
		// 32 raw bytes: never valid as text (base64 is 43 or 44 characters,
		// hex 64), so the two forms cannot be confused.
		return buf, nil
	}
	key, err := ParseMasterKey(string(buf))
	if err != nil {
		return nil, fmt.Errorf("master key file %s: %w", path, err)
	}
	return key, nil
}

// createKeyFile writes a new key into a private temporary file beside path,
// syncs it, and hard-links it into place: link fails if path exists, so the
// key file is never overwritten and never seen half written. Where hard
// links are not supported it falls back to O_CREATE|O_EXCL on path itself.
func createKeyFile(path string) error {
	dir := filepath.Dir(path)
	content := []byte(base64.StdEncoding.EncodeToString(NewKey()) + "\n")

	tmp, err := os.CreateTemp(dir, ".master-key-*.tmp") // mode 0600
	if err != nil {
		return fmt.Errorf("create master key file: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if err := writeSyncClose(tmp, content); err != nil {
		return fmt.Errorf("write master key file: %w", err)
	}
	linkErr := os.Link(tmpName, path)
	switch {
	case linkErr == nil:
	case errors.Is(linkErr, fs.ErrExist):
		return linkErr
	default:
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("create master key file: %w", err)
		}
		if err := writeSyncClose(f, content); err != nil {
			_ = os.Remove(path)
			return fmt.Errorf("write master key file: %w", err)
		}
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the new name durable; not all systems support it
		_ = d.Close()
	}
	return nil
}

func writeSyncClose(f *os.File, b []byte) error {
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
