package app

import (
	"github.com/cgp-platform/cgp/projections"
	"github.com/cgp-platform/cgp/projections/shoperasure"
)

// ShopErasureName is the stable name of the shop-erasure reactor.
const ShopErasureName = shoperasure.Name

// shopErasure is the shop-erasure reactor (its tables are
// projections/shoperasure's); d.ShopErasure is its handler
// (Erasures.ReactShopErasure).
func shopErasure(d Deps) projections.Projector {
	return shoperasure.Projector(d.Codec, shopErasureTypes, d.ShopErasure)
}

// shopErasureTypes are the events the reactor handles (its cases): the
// tokens it must find again once the shop's key is gone, the platform's
// shop/redact, and the erasure itself.
var shopErasureTypes = (*Erasures)(nil).shopErasureCases().Types()
