package projections_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
	eventsqlite "github.com/cgp-platform/cgp/eventlog/sqlite"
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// Register a projector, run the runtime, append an event and read your own
// write once the projector reached the append's position.
func Example() {
	dir, err := os.MkdirTemp("", "projections-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	log, err := eventsqlite.Open(eventsqlite.Config{Path: filepath.Join(dir, "events.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer log.Close()
	store, err := rmsqlite.Open(rmsqlite.Config{Path: filepath.Join(dir, "readmodels.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	rt, err := projections.New(projections.Config{Log: log, Store: store})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = rt.Register(projections.Projector{
		Name:       "shop-names",
		Migrations: []readmodel.Migration{{Version: 1, SQL: `CREATE TABLE shop_names (shop_id TEXT PRIMARY KEY, name TEXT NOT NULL)`}},
		Handle: func(ctx context.Context, tx *sql.Tx, e eventlog.Event) error {
			if e.Type != "ShopRenamed" {
				return nil
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO shop_names (shop_id, name) VALUES (?, ?)
				ON CONFLICT (shop_id) DO UPDATE SET name = excluded.name`, e.ShopID, string(e.Data))
			return err
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	defer func() { cancel(); <-done }()

	res, err := log.Append(ctx, "shop-shop_1", eventlog.Any(), eventlog.EventData{
		ID: uuid.New(), Type: "ShopRenamed", SchemaVersion: 1, ShopID: "shop_1",
		OccurredAt: time.Now().UTC(), Data: []byte("Corner Store"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := rt.WaitFor(wait, res.Position, "shop-names"); err != nil {
		fmt.Println(err)
		return
	}
	var name string
	_ = store.DB().QueryRowContext(ctx, `SELECT name FROM shop_names WHERE shop_id = 'shop_1'`).Scan(&name)
	fmt.Println(name)
	// Output: Corner Store
}
