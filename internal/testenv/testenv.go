// Package testenv builds the write side of the service on real components
// in a test's temporary directory: the SQLite event log, the SQLite vault
// behind its cache, the envelope codec and the command handler. Package
// tests that need the write side use it instead of wiring it again; the
// read side (a read-model store fed by a projections runtime) comes from
// Core.ReadSide, and Dump and Golden read a table and check it against a
// golden file.
package testenv

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	logsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/vault"
	vaultsqlite "github.com/cgp-platform/cgp/vault/sqlite"
)

// Core is the write side over real stores, closed when the test ends.
type Core struct {
	Dir      string
	Log      *logsqlite.Log
	Keys     vault.Vault
	Codec    *envelope.Codec
	Commands *commands.Handler
}

// New opens a Core in a new temporary directory; now is the commands'
// clock (nil: time.Now).
func New(t testing.TB, now func() time.Time) *Core {
	t.Helper()
	dir := t.TempDir()
	l, err := logsqlite.Open(logsqlite.Config{Path: filepath.Join(dir, "events.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	v, err := vaultsqlite.Open(vaultsqlite.Config{Path: filepath.Join(dir, "vault.db"), MasterKey: bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	c := &Core{Dir: dir, Log: l, Keys: vault.NewCache(v, 1000)}
	c.Codec = envelope.New(domain.Events(), c.Keys)
	c.Commands = commands.New(l, c.Codec, now)
	return c
}
