package outbound_test

import (
	"fmt"

	"github.com/cgp-platform/cgp/outbound"
)

// A subscriber checks a notification's signature on the raw body.
func ExampleVerify() {
	secret := []byte("whsec_example")
	body := []byte(`{"id":"evt_1","type":"customer.data_request"}`)
	header := outbound.Sign(secret, body) // what the service sends in X-Service-Signature
	fmt.Println(outbound.Verify(secret, body, header))
	fmt.Println(outbound.Verify(secret, []byte(`{"id":"evt_2"}`), header))
	// Output:
	// true
	// false
}
