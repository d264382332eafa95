package app

import (
	"context"
	"fmt"
	"os"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections/audit"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// VerifyShop checks the shop's history for `cgp audit verify`: through the
// audit index of the live read-model version when it has one (the events
// it has not indexed yet are read from the log after its checkpoint), else
// by reading the whole log and checking the hash chain of every stream
// holding the shop's events.
func VerifyShop(ctx context.Context, c *Core, shop string) (audit.Report, error) {
	path, err := c.Config.ReadModelPath()
	if err != nil {
		return verifyFromLog(ctx, c.Log, shop)
	}
	if _, err := os.Stat(path); err != nil {
		return verifyFromLog(ctx, c.Log, shop)
	}
	store, err := rmsqlite.Open(rmsqlite.Config{Path: path})
	if err != nil {
		return audit.Report{}, fmt.Errorf("open read models: %w", err)
	}
	defer store.Close()
	built, err := audit.NewQueries(store.DB()).Built(ctx)
	if err != nil {
		return audit.Report{}, err
	}
	if !built {
		return verifyFromLog(ctx, c.Log, shop)
	}
	ckpt, err := store.Checkpoint(ctx, audit.Name)
	if err != nil {
		return audit.Report{}, err
	}
	return audit.Verify(ctx, c.Log, audit.NewQueries(store.DB()), ckpt, shop)
}

// verifyFromLog walks the whole log in order.
func verifyFromLog(ctx context.Context, log eventlog.Log, shop string) (audit.Report, error) {
	return audit.Verify(ctx, log, nil, 0, shop)
}
