package replay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// File names in the data directory.
const (
	// DefaultVersion is the live read models when no pointer exists.
	DefaultVersion = "readmodels.db"
	// PointerFile names the live version.
	PointerFile = "readmodels.current"
	stateFile   = "replay.json"
	lockFile    = "replay.lock"
	versionGlob = "readmodels-*.db"
)

// Current returns the path of the live read-model version of dir.
func Current(dir string) (string, error) {
	name, err := currentName(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

func currentName(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, PointerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultVersion, nil
	}
	if err != nil {
		return "", fmt.Errorf("read-model version: %w", err)
	}
	name := strings.TrimSpace(string(b))
	if err := validVersionName(name); err != nil {
		return "", fmt.Errorf("read-model version: %s: %w", PointerFile, err)
	}
	return name, nil
}

// validVersionName accepts the names this package gives versions: a bare
// file name of the data directory, never a path.
func validVersionName(name string) error {
	if name == DefaultVersion {
		return nil
	}
	ok, err := filepath.Match(versionGlob, name)
	if err != nil || !ok || strings.ContainsAny(name, `/\`) || name != filepath.Base(name) {
		return fmt.Errorf("%q is not a read-model version name", name)
	}
	return nil
}

// setCurrent points the data directory at version name, atomically: the
// pointer is written beside, synced, renamed over the old one, and the
// directory synced.
func setCurrent(dir, name string) error {
	if err := validVersionName(name); err != nil {
		return err
	}
	tmp := filepath.Join(dir, PointerFile+".tmp")
	if err := writeSynced(tmp, []byte(name+"\n")); err != nil {
		return fmt.Errorf("switch read-model version: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, PointerFile)); err != nil {
		return fmt.Errorf("switch read-model version: %w", err)
	}
	return syncDir(dir)
}

// removeVersion deletes a version's file and its WAL and shared-memory
// files. A process that still has it open keeps reading it until it moves.
func removeVersion(path string) error {
	var errs []error
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
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

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

func syncDir(dir string) error {
	if err := syncFile(dir); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
