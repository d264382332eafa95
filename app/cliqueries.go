package app

// What the CLI reads from the live read models and the stores of the data
// directory.

import (
	"context"
	"errors"

	"github.com/cgp-platform/cgp/projections/imageops"
	"github.com/cgp-platform/cgp/projections/tenancy"
	"github.com/cgp-platform/cgp/readapi"
	"github.com/cgp-platform/cgp/readmodel"
	"github.com/cgp-platform/cgp/readmodel/versioned"
)

// RetentionCountdowns are the pending retention countdowns (app
// uninstalled, data not erased yet), soonest first, as the tenancy read
// model keeps them, under "countdowns"; with a shop that was erased, when
// it was under "erased_at" (an erased shop has no countdown any more).
func RetentionCountdowns(ctx context.Context, cfg Config, shop string) (map[string]any, error) {
	store, err := cfg.OpenReadModels()
	if err != nil {
		return nil, err
	}
	defer store.Close()
	q := tenancy.NewQueries(store.DB())
	list, err := q.Countdowns(ctx, shop)
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []tenancy.Countdown{}
	}
	out := map[string]any{"countdowns": list}
	if shop != "" {
		at, erased, err := q.ErasedAt(ctx, shop)
		if err != nil {
			return nil, err
		}
		if erased {
			out["erased_at"] = at
		}
	}
	return out, nil
}

// ErasureSourcesOf are the stores `cgp gdpr verify` reads, with the
// warehouse cfg names (opened with the core's adapters).
func ErasureSourcesOf(c *Core, cfg Config) (ErasureSources, error) {
	path, err := cfg.ReadModelPath()
	if err != nil {
		return ErasureSources{}, err
	}
	src := ErasureSources{Vault: c.Vault, Log: c.Log, DataDir: cfg.DataDir, ReadModels: path}
	if cfg.Warehouse != "" && cfg.Warehouse != WarehouseNone && c.Adapters.Warehouse != nil {
		src.Warehouse = func(ctx context.Context) (versioned.Store, readmodel.Store, func(), error) {
			store, err := cfg.OpenReadModels()
			if err != nil {
				return nil, nil, nil, err
			}
			wh, err := c.Adapters.Warehouse(ctx, cfg, nil)
			if err != nil {
				return nil, nil, nil, errors.Join(err, store.Close())
			}
			return wh, store, func() { wh.Close(); store.Close() }, nil
		}
	}
	return src, nil
}

// ImageOperations lists a shop's image operations, newest first, at most
// limit, as the API renders them (`cgp images list`).
func ImageOperations(ctx context.Context, cfg Config, shop, status string, limit int) ([]any, error) {
	store, err := cfg.OpenReadModels()
	if err != nil {
		return nil, err
	}
	defer store.Close()
	ops, _, err := imageops.NewQueries(store.DB()).List(ctx, imageops.Filter{ShopID: shop, Status: status, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]any, len(ops))
	for i := range ops {
		r := readapi.ImageResource(&ops[i])
		out[i] = map[string]any{"id": r.ID, "type": r.Type, "attributes": r.Attributes}
	}
	return out, nil
}
