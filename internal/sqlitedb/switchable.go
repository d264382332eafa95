package sqlitedb

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mattn/go-sqlite3"
)

// Switchable is a connector whose file can be replaced while pools built on
// it are in use: after Switch, every new connection opens the new file, and
// a connection to the old one is discarded by database/sql instead of being
// reused (it reports itself invalid when it goes back to the pool and bad
// when it is taken out of it). A statement running on the old file when
// the switch happens finishes there.
type Switchable struct {
	query  string
	driver *sqlite3.SQLiteDriver

	mu   sync.RWMutex
	path string
	gen  uint64
	// opened: a connection has been made, so the file exists; later
	// connections never create it (a file deleted by a replay's switch,
	// before this process moved, fails to open instead of coming back
	// empty).
	opened atomic.Bool
}

// NewSwitchable returns a switchable connector for the file at path; query
// and pragmas are as for Connector.
func NewSwitchable(path, query, pragmas string) *Switchable {
	return &Switchable{path: path, query: query, driver: &sqlite3.SQLiteDriver{ConnectHook: pragmaHook(pragmas)}}
}

// Path returns the file new connections open.
func (s *Switchable) Path() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.path
}

// Switch makes new connections open path and retires every connection
// opened before.
func (s *Switchable) Switch(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.path = path
	s.gen++
}

func (s *Switchable) current() (string, uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.path, s.gen
}

func (s *Switchable) stale(gen uint64) bool {
	_, cur := s.current()
	return gen != cur
}

// Connect implements driver.Connector.
func (s *Switchable) Connect(ctx context.Context) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, gen := s.current()
	query := s.query
	if s.opened.Load() && !strings.Contains(query, "mode=") {
		query = strings.TrimPrefix(query+"&mode=rw", "&")
	}
	if err := privateUnlessReadOnly(path, query); err != nil {
		return nil, err
	}
	c, err := s.driver.Open(dsn(path, query))
	if err != nil {
		return nil, err
	}
	s.opened.Store(true)
	sc, ok := c.(*sqlite3.SQLiteConn)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("sqlite driver returned %T", c)
	}
	return &switchConn{SQLiteConn: sc, gen: gen, owner: s}, nil
}

// Driver implements driver.Connector.
func (s *Switchable) Driver() driver.Driver { return s.driver }

// switchConn is a connection of one generation of a Switchable. Embedding
// the driver's connection keeps every interface database/sql looks for
// (contexts, prepared statements, transactions with options).
type switchConn struct {
	*sqlite3.SQLiteConn
	gen   uint64
	owner *Switchable
}

// IsValid implements driver.Validator: a connection to a file switched away
// from is not put back in the pool.
func (c *switchConn) IsValid() bool { return !c.owner.stale(c.gen) }

// ResetSession implements driver.SessionResetter: a pooled connection to a
// file switched away from is dropped before its next use.
func (c *switchConn) ResetSession(context.Context) error {
	if c.owner.stale(c.gen) {
		return driver.ErrBadConn
	}
	return nil
}

var (
	_ driver.Validator          = (*switchConn)(nil)
	_ driver.SessionResetter    = (*switchConn)(nil)
	_ driver.QueryerContext     = (*switchConn)(nil)
	_ driver.ExecerContext      = (*switchConn)(nil)
	_ driver.ConnBeginTx        = (*switchConn)(nil)
	_ driver.ConnPrepareContext = (*switchConn)(nil)
)
