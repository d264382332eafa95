package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/projections/audit"
	"github.com/cgp-platform/cgp/readapi"
	rmsqlite "github.com/cgp-platform/cgp/readmodel/sqlite"
)

// mountAudit registers the audit history endpoints (beta) on r.
func mountAudit(a *App, r *mux.Router) {
	readapi.NewAudit(audit.NewQueries(a.Store.DB()), a.Log, a.Codec, a.Auth, mustCursorCodec(a.Core), a.Runtime,
		func() eventlog.Position { return auditCheckpoint(a) }).Routes(r)
}

// auditCheckpoint is how far the audit index has folded the log: the
// runtime's checkpoint, or the stored one before the runtime has loaded it
// (right after a start; 0 there would make verify fall back to reading the
// whole log, which cannot see an event deleted from a stream of one).
func auditCheckpoint(a *App) eventlog.Position {
	if cp, ok := a.Runtime.Checkpoints()[audit.Name]; ok {
		return cp
	}
	cp, err := a.Store.Checkpoint(context.Background(), audit.Name)
	if err != nil {
		return 0
	}
	return cp
}

// asOfReader is the as-of reader of the customer read.
func asOfReader(a *App) *readapi.AsOf {
	return readapi.NewAsOf(audit.NewQueries(a.Store.DB()), a.Log, a.Codec, a.Runtime, time.Now)
}

// verifyShop checks the shop's history for `cgp audit verify`: through the
// audit index of the live read-model version when it has one (the events
// it has not indexed yet are read from the log after its checkpoint), else
// by reading the whole log.
func verifyShop(ctx context.Context, c *Core, shop string) (AuditReport, error) {
	path, err := c.Config.readModelPath()
	if err != nil {
		return VerifyShop(ctx, c.Log, shop)
	}
	if _, err := os.Stat(path); err != nil {
		return VerifyShop(ctx, c.Log, shop)
	}
	store, err := rmsqlite.Open(rmsqlite.Config{Path: path})
	if err != nil {
		return AuditReport{}, fmt.Errorf("open read models: %w", err)
	}
	defer store.Close()
	built, err := audit.NewQueries(store.DB()).Built(ctx)
	if err != nil {
		return AuditReport{}, err
	}
	if !built {
		return VerifyShop(ctx, c.Log, shop)
	}
	ckpt, err := store.Checkpoint(ctx, audit.Name)
	if err != nil {
		return AuditReport{}, err
	}
	return audit.Verify(ctx, c.Log, audit.NewQueries(store.DB()), ckpt, shop)
}
