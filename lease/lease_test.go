package lease_test

import (
	"testing"

	"github.com/cgp-platform/cgp/lease"
	"github.com/cgp-platform/cgp/lease/leasetest"
)

func TestLocal(t *testing.T) {
	leasetest.Run(t, func(*testing.T) (lease.Lease, lease.Lease) {
		l := lease.NewLocal()
		return l, l
	})
}
