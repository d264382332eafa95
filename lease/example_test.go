package lease_test

import (
	"context"
	"fmt"

	"github.com/cgp-platform/cgp/lease"
)

// A job that must run on one server at a time runs under a lease named
// after it; with the in-process lease of a single server it runs at once.
func ExampleLease() {
	var l lease.Lease = lease.NewLocal()
	err := l.Run(context.Background(), "job/webhook_delivery", func(ctx context.Context) error {
		fmt.Println("delivering, alone")
		return nil
	})
	fmt.Println(err)
	// Output:
	// delivering, alone
	// <nil>
}
