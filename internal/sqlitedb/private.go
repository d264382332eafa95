package sqlitedb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FileMode and DirMode are the modes of every file and folder the service
// creates in its data directory: its owner's only. The stores hold
// sealed personal data, wrapped keys and token hashes; nobody else on the
// machine has any business reading them.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// PrivateFile makes the SQLite database at path private before SQLite
// opens it: it creates the folder (DirMode) and the empty file
// (FileMode) when missing, whatever the process's umask, and tightens an
// existing file (and its -wal, -shm and -journal companions) created by
// an older version. SQLite creates the companions with the mode of the
// database file, so they are private too. In-memory databases are left
// alone.
func PrivateFile(path string) error {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file::memory:") {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), DirMode); err != nil {
		return fmt.Errorf("create folder of %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	switch {
	case err == nil:
		if err := f.Chmod(FileMode); err != nil { // past the umask
			_ = f.Close()
			return fmt.Errorf("make %s private: %w", path, err)
		}
		return f.Close()
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("create %s: %w", path, err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		info, err := os.Stat(p)
		if err != nil {
			continue
		}
		if info.Mode().IsRegular() && info.Mode().Perm()&^FileMode != 0 {
			if err := os.Chmod(p, FileMode); err != nil {
				return fmt.Errorf("make %s private: %w", p, err)
			}
		}
	}
	return nil
}

// privateUnlessReadOnly runs PrivateFile for a connection that may
// create the file (not a read-only or in-memory one).
func privateUnlessReadOnly(path, query string) error {
	if strings.Contains(query, "mode=ro") || strings.Contains(query, "mode=memory") {
		return nil
	}
	return PrivateFile(path)
}
