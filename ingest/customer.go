package ingest

import (
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/shopify"
)

// ParseCustomer maps a customers/create or customers/update payload to a
// profile (see shopify.ParseCustomerProfile). It rejects a payload without
// a customer id.
func ParseCustomer(body []byte) (domain.CustomerProfile, error) {
	return shopify.ParseCustomerProfile(body)
}
