package marketplace

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// Locator says where a value is in a delivery: a request header, or a
// top-level field of the JSON body (a string, or a number as written).
type Locator struct {
	Header    string
	BodyField string
}

// String says where the value is, for documentation.
func (l Locator) String() string {
	if l.Header != "" {
		return "header " + l.Header
	}
	return "body field " + l.BodyField
}

// Signed says which bytes a signature covers.
type Signed int

const (
	// SignedBody is the raw body.
	SignedBody Signed = iota + 1
	// SignedAppKeyBody is the connection's app key followed by the raw body.
	SignedAppKeyBody
	// SignedIDTimestampBody is "<delivery id>.<timestamp>.<raw body>"
	// (Standard Webhooks).
	SignedIDTimestampBody
)

// Encoding says how the signature header is written.
type Encoding int

const (
	// EncodingHex is the hex HMAC-SHA256 (either case) after the contract's
	// Prefix, if any.
	EncodingHex Encoding = iota + 1
	// EncodingStandardWebhooks is a space-separated list of
	// "<version>,<base64 HMAC-SHA256>"; only "v1" entries are checked and
	// one match is enough (a sender signs with the old and the new secret
	// while rotating).
	EncodingStandardWebhooks
)

// SecretFormat says how the secret given at connection becomes the HMAC key.
type SecretFormat int

const (
	// SecretRaw uses the secret's bytes as the key.
	SecretRaw SecretFormat = iota + 1
	// SecretStandardWebhooks decodes base64, after an optional "whsec_"
	// prefix, as the Standard Webhooks libraries do.
	SecretStandardWebhooks
)

// Contract is one marketplace's webhook contract. The values are fixed
// per marketplace (see Contracts); the secret and app key come from the
// seller account's connection.
type Contract struct {
	// Name is the marketplace, as in the path /webhooks/marketplaces/{name}.
	Name string
	// Account locates the seller account id.
	Account Locator
	// Delivery locates the sender's delivery id, the de-duplication key. A
	// body field that is absent falls back to the SHA-256 of the body.
	Delivery Locator
	// Kind locates the event type, kept as sent.
	Kind Locator
	// Signature is the header carrying the signature, after Prefix.
	Signature string
	Prefix    string
	// Timestamp is the header with the signing time in Unix seconds ("" when
	// the contract has none); Tolerance bounds its distance from now.
	Timestamp string
	Tolerance time.Duration
	Signed    Signed
	Encoding  Encoding
	Secret    SecretFormat
	// AppKeyRequired: the signature covers the connection's app key.
	AppKeyRequired bool
	// parse maps a verified body (and the signing time, zero when the
	// contract has none) to a Notice.
	parse func(body []byte, sentAt time.Time) (Notice, error)
}

// Notice is what a verified delivery says, in the service's terms: an order
// update when Order is set, a notification of another kind otherwise.
type Notice struct {
	Kind       string
	Order      *Order
	ResourceID string
	OccurredAt time.Time // zero when the payload does not say
}

// Order is an order's state as a marketplace reports it.
type Order struct {
	ID       string
	Status   string
	Total    *domain.Amount
	Currency string
}

// Contracts returns every contract, in the order of domain.Marketplaces.
func Contracts() []*Contract {
	return []*Contract{etsy(), tiktokShop(), generic()}
}

// Lookup returns the contract of a marketplace.
func Lookup(name string) (*Contract, bool) {
	for _, c := range Contracts() {
		if c.Name == name {
			return c, true
		}
	}
	return nil, false
}

// Parse maps a verified delivery body to a Notice. A body that does not fit
// the contract's payload is a validation failure (domain.CodeInvalid).
func (c *Contract) Parse(body []byte, sentAt time.Time) (Notice, error) {
	return c.parse(body, sentAt)
}

// Key turns a connection's secret into the HMAC key.
func (c *Contract) Key(secret string) ([]byte, error) {
	if c.Secret != SecretStandardWebhooks {
		return []byte(secret), nil
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) < domain.MinMarketplaceSecret {
		return nil, domain.Invalid("secret", "a %s secret is base64 (optionally after whsec_) of at least %d bytes", c.Name, domain.MinMarketplaceSecret)
	}
	return key, nil
}

// CheckCredentials reports whether a secret and app key can verify this
// contract's deliveries, before they are stored.
func (c *Contract) CheckCredentials(secret, appKey string) error {
	if _, err := c.Key(secret); err != nil {
		return err
	}
	if c.AppKeyRequired && strings.TrimSpace(appKey) == "" {
		return domain.Invalid("app_key", "%s signs with the app key: it is required", c.Name)
	}
	return nil
}

// Describe says the contract in one paragraph (for the CLI's help and the
// documentation).
func (c *Contract) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: account in %s; delivery id in %s; signature in header %s", c.Name, c.Account, c.Delivery, c.Signature)
	if c.Prefix != "" {
		fmt.Fprintf(&b, " (after %q)", c.Prefix)
	}
	switch c.Signed {
	case SignedBody:
		b.WriteString(", HMAC-SHA256 of the raw body")
	case SignedAppKeyBody:
		b.WriteString(", HMAC-SHA256 of the app key followed by the raw body")
	case SignedIDTimestampBody:
		b.WriteString(`, HMAC-SHA256 of "<id>.<timestamp>.<raw body>"`)
	}
	if c.Encoding == EncodingStandardWebhooks {
		b.WriteString(`, as space-separated "v1,<base64>"`)
	} else {
		b.WriteString(", in hex")
	}
	if c.Timestamp != "" {
		fmt.Fprintf(&b, "; timestamp in header %s, within %v", c.Timestamp, c.Tolerance)
	} else {
		b.WriteString("; no timestamp (repeats are caught by the delivery id)")
	}
	return b.String()
}
