package sqlitedb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
// opens it: it creates the empty file (FileMode) when missing, whatever
// the process's umask, and tightens an existing file (and its -wal, -shm
// and -journal companions) created by an older version. SQLite creates
// the companions with the mode of the database file, so they are private
// too. The folder must exist (the data directory is created DirMode by
// the binary). In-memory databases are left alone.
func PrivateFile(path string) error {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file::memory:") {
		return nil
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
	return tighten(path)
}

// tighten makes an existing database file and its companions FileMode.
func tighten(path string) error {
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
// create the file; one opened "mode=rw" (which must not create it) only
// has an existing file tightened, a read-only or in-memory one nothing.
func privateUnlessReadOnly(path, query string) error {
	mode := ""
	for _, kv := range strings.Split(query, "&") {
		if v, ok := strings.CutPrefix(kv, "mode="); ok {
			mode = v
		}
	}
	switch {
	case mode == "ro" || mode == "memory" || path == "" || path == ":memory:":
		return nil
	case mode != "":
		return tighten(path)
	}
	return PrivateFile(path)
}
