package vault_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/vault"
	"github.com/cgp-platform/cgp/vault/vaulttest"
)

func TestParseMasterKey(t *testing.T) {
	key := make([]byte, vault.MasterKeySize)
	for i := range key {
		key[i] = byte(0xf0 + i) // makes std and URL base64 differ (+/ vs -_)
	}
	for name, s := range map[string]string{
		"hex":           hex.EncodeToString(key),
		"HEX":           strings.ToUpper(hex.EncodeToString(key)),
		"base64":        base64.StdEncoding.EncodeToString(key),
		"base64 raw":    base64.RawStdEncoding.EncodeToString(key),
		"base64url":     base64.URLEncoding.EncodeToString(key),
		"base64url raw": base64.RawURLEncoding.EncodeToString(key),
		"white space":   "  " + base64.StdEncoding.EncodeToString(key) + "\n",
	} {
		got, err := vault.ParseMasterKey(s)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, key) {
			t.Errorf("%s: decoded another key", name)
		}
	}
}

func TestParseMasterKeyRefuses(t *testing.T) {
	for name, s := range map[string]string{
		"empty":         "",
		"blank":         " \n",
		"16 bytes b64":  base64.StdEncoding.EncodeToString(make([]byte, 16)),
		"33 bytes b64":  base64.StdEncoding.EncodeToString(make([]byte, 33)),
		"63 hex digits": strings.Repeat("a", 63),
		"hex 31 bytes":  hex.EncodeToString(make([]byte, 31)),
		"passphrase":    "correct horse battery staple!",
	} {
		_, err := vault.ParseMasterKey(s)
		if !errors.Is(err, vault.ErrInvalidMasterKey) {
			t.Errorf("%s: %v, want ErrInvalidMasterKey", name, err)
			continue
		}
		if trimmed := strings.TrimSpace(s); len(trimmed) > 3 && strings.Contains(err.Error(), trimmed) {
			t.Errorf("%s: error %q repeats the secret input", name, err)
		}
	}
}

func FuzzParseMasterKey(f *testing.F) {
	f.Add(base64.StdEncoding.EncodeToString(make([]byte, 32)))
	f.Add(hex.EncodeToString(make([]byte, 32)))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := vault.ParseMasterKey(s)
		if err == nil && len(k) != vault.MasterKeySize {
			t.Fatalf("accepted %q as a %d-byte key", s, len(k))
		}
		if err != nil && !errors.Is(err, vault.ErrInvalidMasterKey) {
			t.Fatalf("error %v does not wrap ErrInvalidMasterKey", err)
		}
	})
}

func TestLoadOrCreateKeyFileCreates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "master.key")
	k1, err := vault.LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(k1) != vault.MasterKeySize {
		t.Fatalf("key of %d bytes", len(k1))
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Fatalf("new key file has mode %04o, want 0600", perm)
	}
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if parsed, err := vault.ParseMasterKey(string(content)); err != nil || !bytes.Equal(parsed, k1) {
		t.Fatalf("file content does not parse to the returned key: %v", err)
	}
	k2, err := vault.LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k1, k2) {
		t.Fatal("second call returned another key")
	}
	assertOnlyFiles(t, dir, "master.key")
}

func TestLoadOrCreateKeyFileReadsExisting(t *testing.T) {
	key := bytes.Repeat([]byte{9}, vault.MasterKeySize)
	for name, content := range map[string][]byte{
		"hex":    []byte(hex.EncodeToString(key) + "\n"),
		"base64": []byte(base64.StdEncoding.EncodeToString(key)),
		"raw":    key,
	} {
		path := filepath.Join(t.TempDir(), "master.key")
		if err := os.WriteFile(path, content, 0o400); err != nil {
			t.Fatal(err)
		}
		got, err := vault.LoadOrCreateKeyFile(path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, key) {
			t.Errorf("%s: read another key", name)
		}
	}
}

func TestLoadOrCreateKeyFileRefusesLoosePermissions(t *testing.T) {
	for _, perm := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o666} {
		path := filepath.Join(t.TempDir(), "master.key")
		content := []byte(base64.StdEncoding.EncodeToString(vault.NewKey()))
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, perm); err != nil {
			t.Fatal(err)
		}
		_, err := vault.LoadOrCreateKeyFile(path)
		if !errors.Is(err, vault.ErrInsecureKeyFile) {
			t.Errorf("mode %04o: %v, want ErrInsecureKeyFile", perm, err)
			continue
		}
		if !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %04o: error %q does not say how to fix it", perm, err)
		}
		after, _ := os.ReadFile(path)
		if !bytes.Equal(after, content) {
			t.Errorf("mode %04o: the file was changed", perm)
		}
	}
}

func TestLoadOrCreateKeyFileNeverOverwrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.key")
	if err := os.WriteFile(path, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := vault.LoadOrCreateKeyFile(path); !errors.Is(err, vault.ErrInvalidMasterKey) {
		t.Fatalf("garbage key file: %v, want ErrInvalidMasterKey", err)
	}
	if after, _ := os.ReadFile(path); string(after) != "not a key\n" {
		t.Fatal("an unreadable key file was overwritten")
	}
}

func TestLoadOrCreateKeyFileOtherFailures(t *testing.T) {
	dir := t.TempDir()
	if _, err := vault.LoadOrCreateKeyFile(filepath.Join(dir, "missing", "master.key")); err == nil {
		t.Error("created a key file in a missing directory")
	}
	if _, err := vault.LoadOrCreateKeyFile(dir); !errors.Is(err, vault.ErrInsecureKeyFile) {
		t.Errorf("directory as key file: %v, want ErrInsecureKeyFile", err)
	}
	big := filepath.Join(dir, "big.key")
	if err := os.WriteFile(big, bytes.Repeat([]byte("A"), 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := vault.LoadOrCreateKeyFile(big); !errors.Is(err, vault.ErrInvalidMasterKey) {
		t.Errorf("4 KiB key file: %v, want ErrInvalidMasterKey", err)
	}
}

func TestLoadOrCreateKeyFileConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "master.key")
	vaulttest.SameKey(t, 8, func(int) ([]byte, error) { return vault.LoadOrCreateKeyFile(path) })
	assertOnlyFiles(t, dir, "master.key")
}

func assertOnlyFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("directory holds %v, want %v (temporary files left behind?)", got, want)
	}
}
