package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cgp-platform/cgp/readmodel"
	"github.com/cgp-platform/cgp/readmodel/sqlite"
)

// A projector migrates its tables, then applies each event together with
// its checkpoint; a redelivered event is skipped.
func Example() {
	dir, err := os.MkdirTemp("", "readmodel-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(sqlite.Config{Path: filepath.Join(dir, "readmodels.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	ctx := context.Background()

	err = store.Migrate(ctx, "orders", []readmodel.Migration{
		{Version: 1, SQL: `CREATE TABLE orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL)`},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	insert := func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO orders (id, total) VALUES ('ord_1', 4200)`)
		return err
	}
	for range 2 { // the second delivery of position 17 is skipped
		applied, err := store.Apply(ctx, "orders", 17, insert)
		fmt.Println("applied:", applied, err)
	}
	cp, _ := store.Checkpoint(ctx, "orders")
	var total int
	_ = store.DB().QueryRowContext(ctx, `SELECT total FROM orders WHERE id = 'ord_1'`).Scan(&total)
	fmt.Println("checkpoint:", cp, "total:", total)
	// Output:
	// applied: true <nil>
	// applied: false <nil>
	// checkpoint: 17 total: 4200
}
