// Package sqlitedb opens SQLite files (mattn/go-sqlite3) with the pragmas
// every connection of a pool needs: pragmas are per connection in SQLite, so
// a pool must run them on each new one. It imports no package of ours.
package sqlitedb

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net/url"

	"github.com/mattn/go-sqlite3"
)

// Connector returns a connector for the file at path, created private
// (PrivateFile) unless the query opens it read-only. The path is escaped
// into a file: URI, so '?', '#' and '%' in a directory name stay part of it;
// query holds driver parameters (e.g. "_txlock=immediate"); pragmas run on
// every new connection.
func Connector(path, query, pragmas string) driver.Connector {
	return &connector{path: path, query: query, dsn: dsn(path, query), driver: &sqlite3.SQLiteDriver{ConnectHook: pragmaHook(pragmas)}}
}

// dsn is the file: URI of path with the driver parameters of query.
func dsn(path, query string) string {
	d := "file:" + (&url.URL{Path: path}).EscapedPath()
	if query != "" {
		d += "?" + query
	}
	return d
}

// pragmaHook runs pragmas on every new connection (none when empty).
func pragmaHook(pragmas string) func(*sqlite3.SQLiteConn) error {
	return func(c *sqlite3.SQLiteConn) error {
		if pragmas == "" {
			return nil
		}
		if _, err := c.Exec(pragmas, nil); err != nil {
			return fmt.Errorf("set pragmas: %w", err)
		}
		return nil
	}
}

type connector struct {
	path   string
	query  string
	dsn    string
	driver *sqlite3.SQLiteDriver
}

// Connect implements driver.Connector.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := privateUnlessReadOnly(c.path, c.query); err != nil {
		return nil, err
	}
	return c.driver.Open(c.dsn)
}

// Driver implements driver.Connector.
func (c *connector) Driver() driver.Driver { return c.driver }
