package app

import (
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/readmodel"
)

// ShopErasureName is the stable name of the shop-erasure reactor.
const ShopErasureName = "shop_erasure"

var shopErasureMigrations = []readmodel.Migration{{Version: 1, SQL: `
CREATE TABLE shop_erasure_tokens (
	shop_id  TEXT NOT NULL,
	token_id TEXT NOT NULL,
	PRIMARY KEY (shop_id, token_id)
) WITHOUT ROWID;
CREATE TABLE shop_erasure_pending (
	shop_id  TEXT PRIMARY KEY,
	position INTEGER NOT NULL
);
`}}

// shopErasure is the shop-erasure reactor; d.ShopErasure is its handler
// (Erasures.ReactShopErasure).
func shopErasure(d Deps) projections.Projector {
	return projections.Projector{
		Name:       ShopErasureName,
		Migrations: shopErasureMigrations,
		Types:      shopErasureTypes,
		Handle:     projections.Decoding(d.Codec, shopErasureTypes, d.ShopErasure),
	}
}

// shopErasureTypes are the events the reactor handles (its cases): the
// tokens it must find again once the shop's key is gone, the platform's
// shop/redact, and the erasure itself.
var shopErasureTypes = (*Erasures)(nil).shopErasureCases().Types()
