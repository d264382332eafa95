package domain

import "strings"

// maxIdentityToken bounds a cart or checkout token the pixel sends.
const maxIdentityToken = 256

// identifyVisitor reads the identity fields of a pixel event into ev: the
// logged-in customer becomes its customer id (the same derivation as the
// webhooks', so both name the same customer), the cart and checkout
// tokens become the ids the cart and checkout webhooks carry. The tokens
// are not kept. Each field is optional; a malformed one is a validation
// error naming it.
func identifyVisitor(shopID string, in StorefrontEvent, ev *StorefrontEventRecorded) error {
	if c := strings.TrimSpace(in.CustomerID); c != "" {
		ext, ok := platformCustomerID(c)
		if !ok {
			return Invalid("customer_id", "customer_id must be the platform's customer id (digits or gid://shopify/Customer/<digits>)")
		}
		ev.CustomerID = CustomerIDFromExternal(shopID, ext)
	}
	if t := strings.TrimSpace(in.CartToken); t != "" {
		tok, ok := identityToken(t, "gid://shopify/Cart/")
		if !ok {
			return Invalid("cart_token", "cart_token must be 1 to 256 printable characters without spaces")
		}
		ev.CartID = CartIDFromToken(shopID, tok)
	}
	if t := strings.TrimSpace(in.CheckoutToken); t != "" {
		tok, ok := identityToken(t, "gid://shopify/Checkout/")
		if !ok {
			return Invalid("checkout_token", "checkout_token must be 1 to 256 printable characters without spaces")
		}
		ev.CheckoutTokenID = CheckoutTokenID(shopID, tok)
	}
	return nil
}

// platformCustomerID returns the digits of a customer id sent as digits or
// as a GraphQL global id.
func platformCustomerID(s string) (string, bool) {
	s = strings.TrimPrefix(s, "gid://shopify/Customer/")
	if s == "" || len(s) > 20 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", false
		}
	}
	return s, true
}

// identityToken returns a cart or checkout token without its GraphQL
// prefix and without the "?key=" the storefront appends to a cart's id
// (the webhooks send the bare token).
func identityToken(s, gidPrefix string) (string, bool) {
	s = strings.TrimPrefix(s, gidPrefix)
	s, _, _ = strings.Cut(s, "?")
	if s == "" || len(s) > maxIdentityToken {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return "", false
		}
	}
	return s, true
}
