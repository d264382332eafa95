package replay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCurrentFollowsThePointer(t *testing.T) {
	dir := t.TempDir()
	if p, err := Current(dir); err != nil || p != filepath.Join(dir, DefaultVersion) {
		t.Fatalf("no pointer: %s %v", p, err)
	}
	name := "readmodels-20261121T120000.000000000.db"
	if err := setCurrent(dir, name); err != nil {
		t.Fatal(err)
	}
	if p, err := Current(dir); err != nil || p != filepath.Join(dir, name) {
		t.Fatalf("after switch: %s %v", p, err)
	}
	if _, err := os.Stat(filepath.Join(dir, PointerFile+".tmp")); !os.IsNotExist(err) {
		t.Fatalf("temporary pointer left: %v", err)
	}
	if err := setCurrent(dir, "../elsewhere.db"); err == nil {
		t.Fatal("a path was accepted as a version")
	}
}

// A pointer written by hand (or damaged) never leads outside the data
// directory.
func TestCurrentRefusesABadPointer(t *testing.T) {
	for _, content := range []string{"../readmodels-1.db", "/etc/passwd", "readmodels-1.db/../../x", "events.db", "", "readmodels-.db\x00"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, PointerFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if p, err := Current(dir); err == nil {
			t.Errorf("pointer %q gave %s", content, p)
		}
	}
}

func TestOneReplayAtATime(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock(dir); !errors.Is(err, ErrBusy) {
		t.Fatalf("second lock: %v", err)
	}
	unlock()
	unlock2, err := lock(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}

func TestUnreadableStateStartsAnew(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"{", `{"target":"../x.db"}`, `{"target":"readmodels.db"}`} {
		if err := os.WriteFile(filepath.Join(dir, stateFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if st, err := loadState(dir); err != nil || st != nil {
			t.Errorf("state %q: %v %v", content, st, err)
		}
	}
}

func FuzzVersionName(f *testing.F) {
	for _, s := range []string{DefaultVersion, "readmodels-20261121T120000.000000000.db", "../readmodels-1.db", "readmodels-a/b.db", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if validVersionName(name) != nil {
			return
		}
		if strings.ContainsAny(name, `/\`) || filepath.Base(name) != name || name == "." || name == ".." {
			t.Fatalf("accepted %q", name)
		}
		if name != DefaultVersion && (!strings.HasPrefix(name, "readmodels-") || !strings.HasSuffix(name, ".db")) {
			t.Fatalf("accepted %q", name)
		}
	})
}
