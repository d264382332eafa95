package localfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/images/store"
)

const (
	dirMode  = 0o700
	fileMode = 0o600
	// tmpDir holds blobs being written; its name is not a valid shop id.
	tmpDir = ".tmp"
	// tmpGrace is how old a temporary file must be before Sweep takes it
	// for a crash's leftover.
	tmpGrace = 24 * time.Hour
)

// Config configures a Store.
type Config struct {
	// Root is the directory that holds every shop's blobs; it is created
	// (0700) when missing. Required.
	Root string
	// Now is the clock that stamps stored blobs; time.Now when nil.
	Now func() time.Time
}

// Store is the local-files store.Store.
type Store struct {
	root string
	now  func() time.Time
	// mu orders renames into a shop's directory (shared) against the
	// removal of directories (exclusive), so a Put never lands in a
	// directory being removed.
	mu sync.RWMutex
}

var _ store.Store = (*Store)(nil)

// New opens the store under cfg.Root, creating it and its temporary
// directory with mode 0700.
func New(cfg Config) (*Store, error) {
	if cfg.Root == "" {
		return nil, errors.New("localfs: root directory is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	for _, d := range []string{cfg.Root, filepath.Join(cfg.Root, tmpDir)} {
		if err := os.MkdirAll(d, dirMode); err != nil {
			return nil, fmt.Errorf("localfs: create %s: %w", d, err)
		}
		if err := os.Chmod(d, dirMode); err != nil {
			return nil, fmt.Errorf("localfs: chmod %s: %w", d, err)
		}
	}
	return &Store{root: cfg.Root, now: cfg.Now}, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, shop, key string, r io.Reader) (string, int64, error) {
	if err := checkNames(shop, key); err != nil {
		return "", 0, err
	}
	if err := ctx.Err(); err != nil {
		return "", 0, fmt.Errorf("put %s/%s: %w", shop, key, err)
	}
	tmp, err := os.CreateTemp(filepath.Join(s.root, tmpDir), "put-*")
	if err != nil {
		return "", 0, fmt.Errorf("put %s/%s: create temporary file: %w", shop, key, err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(tmp, h), ctxReader{ctx: ctx, r: r})
	if err != nil {
		return "", 0, fmt.Errorf("put %s/%s: write: %w", shop, key, err)
	}
	if err := tmp.Chmod(fileMode); err != nil {
		return "", 0, fmt.Errorf("put %s/%s: chmod: %w", shop, key, err)
	}
	if err := tmp.Sync(); err != nil {
		return "", 0, fmt.Errorf("put %s/%s: sync: %w", shop, key, err)
	}
	if err := tmp.Close(); err != nil {
		return "", 0, fmt.Errorf("put %s/%s: close: %w", shop, key, err)
	}
	now := s.now()
	if err := os.Chtimes(tmp.Name(), now, now); err != nil {
		return "", 0, fmt.Errorf("put %s/%s: stamp: %w", shop, key, err)
	}
	if err := s.rename(shop, key, tmp.Name()); err != nil {
		return "", 0, err
	}
	committed = true
	return hex.EncodeToString(h.Sum(nil)), size, nil
}

// rename moves the written blob into the shop's directory, creating it.
func (s *Store) rename(shop, key, tmp string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	dir := filepath.Join(s.root, shop)
	if err := os.Mkdir(dir, dirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("put %s/%s: create shop directory: %w", shop, key, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, key)); err != nil {
		return fmt.Errorf("put %s/%s: rename: %w", shop, key, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("put %s/%s: sync directory: %w", shop, key, err)
	}
	return nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, shop, key string) (io.ReadCloser, error) {
	if err := checkNames(shop, key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s/%s: %w", shop, key, err)
	}
	f, err := os.Open(filepath.Join(s.root, shop, key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, domain.NotFound("image result")
	}
	if err != nil {
		return nil, fmt.Errorf("get %s/%s: %w", shop, key, err)
	}
	return f, nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, shop, key string) error {
	if err := checkNames(shop, key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s/%s: %w", shop, key, err)
	}
	if err := os.Remove(filepath.Join(s.root, shop, key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s/%s: %w", shop, key, err)
	}
	return nil
}

// DeleteShop implements store.Store.
func (s *Store) DeleteShop(ctx context.Context, shop string) error {
	if err := store.CheckShop(shop); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete shop %s: %w", shop, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.RemoveAll(filepath.Join(s.root, shop)); err != nil {
		return fmt.Errorf("delete shop %s: %w", shop, err)
	}
	return nil
}

// Sweep implements store.Store. It also removes temporary files older than
// olderThan and a day old (left by a crash) without counting them, and the directories
// of shops it leaves empty.
func (s *Store) Sweep(ctx context.Context, olderThan time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	shops, err := os.ReadDir(s.root)
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	removed := 0
	for _, d := range shops {
		if !d.IsDir() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return removed, fmt.Errorf("sweep: %w", err)
		}
		if d.Name() == tmpDir {
			// A temporary file a day old was left by a crash; a younger
			// one may be a Put in progress.
			cutoff := s.now().Add(-tmpGrace)
			if olderThan.Before(cutoff) {
				cutoff = olderThan
			}
			_, _, _ = sweepDir(filepath.Join(s.root, tmpDir), cutoff)
			continue
		}
		n, left, err := sweepDir(filepath.Join(s.root, d.Name()), olderThan)
		removed += n
		if err != nil {
			return removed, fmt.Errorf("sweep %s: %w", d.Name(), err)
		}
		if left == 0 {
			s.removeIfEmpty(d.Name())
		}
	}
	return removed, nil
}

// sweepDir removes the files of dir modified before olderThan and returns
// how many it removed and how many it left.
func sweepDir(dir string, olderThan time.Time) (removed, left int, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // replaced or removed meanwhile
		}
		if err != nil {
			return removed, left, err
		}
		if !info.Mode().IsRegular() || !info.ModTime().Before(olderThan) {
			left++
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, left, err
		}
		removed++
	}
	return removed, left, nil
}

// removeIfEmpty removes a shop's directory that holds nothing, under the
// exclusive lock so no Put is renaming into it.
func (s *Store) removeIfEmpty(shop string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = os.Remove(filepath.Join(s.root, shop)) // fails harmlessly when not empty
}

func checkNames(shop, key string) error {
	if err := store.CheckShop(shop); err != nil {
		return err
	}
	return store.CheckKey(key)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	// Some file systems cannot sync a directory; the rename stands.
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
