package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"
	"time"
)

// Storefront event types the pixel accepts.
var storefrontEventTypes = map[string]bool{
	"page_view": true, "product_view": true, "add_to_cart": true, "checkout_started": true, "search": true,
}

// attributionParams are the query parameters a touchpoint keeps: UTM
// parameters and advertising click ids. Every other query parameter is
// dropped (it may carry personal data).
var attributionParams = map[string]bool{
	"utm_source": true, "utm_medium": true, "utm_campaign": true, "utm_term": true, "utm_content": true,
	"gclid": true, "gbraid": true, "wbraid": true, "fbclid": true, "ttclid": true, "msclkid": true, "li_fat_id": true,
}

// VisitorStream is the stream of one storefront visitor (pseudonymous id
// hashed, so the stream id carries nothing personal).
func VisitorStream(shopID, anonymousID string) string {
	sum := sha256.Sum256([]byte(shopID + "\x00" + anonymousID))
	return "visitor-" + hex.EncodeToString(sum[:16])
}

// StorefrontEventRecorded: the storefront pixel reported a visitor event.
type StorefrontEventRecorded struct {
	ShopID       string            `json:"shop_id"`
	Type         string            `json:"type"`
	AnonymousID  string            `json:"anonymous_id"`
	Host         string            `json:"host"`
	Path         string            `json:"path"`
	Params       map[string]string `json:"params,omitempty"`
	ReferrerHost string            `json:"referrer_host,omitempty"`
	OccurredAt   time.Time         `json:"occurred_at"`
	// Identity links (storefront_identity.go): the logged-in customer
	// (cus_…), the cart (crt_…, from the cart token) and the checkout
	// (ctk_…, from the checkout token) the visitor is on; the tokens
	// themselves are not kept.
	CustomerID      string `json:"customer_id,omitempty"`
	CartID          string `json:"cart_id,omitempty"`
	CheckoutTokenID string `json:"checkout_token_id,omitempty"`
}

// EventType implements Event.
func (StorefrontEventRecorded) EventType() string { return "StorefrontEventRecorded" }

// StorefrontEvent is what the pixel sends.
type StorefrontEvent struct {
	Type        string
	URL         string
	Referrer    string
	AnonymousID string
	OccurredAt  time.Time
	// CustomerID is the platform's id of the logged-in customer (digits
	// or gid://shopify/Customer/<digits>); CartToken and CheckoutToken
	// the platform's tokens of the visitor's cart and checkout. All
	// optional; see storefront_identity.go.
	CustomerID    string
	CartToken     string
	CheckoutToken string
}

// RecordStorefrontEvent validates a pixel event and keeps only what
// attribution needs: host, path, UTM parameters, click ids, the referrer's
// host. now bounds occurred_at (not more than a minute ahead, not older than
// 7 days; a zero time becomes now).
func RecordStorefrontEvent(shopID string, in StorefrontEvent, now time.Time) (*StorefrontEventRecorded, error) {
	if !storefrontEventTypes[in.Type] {
		return nil, Invalid("type", "type must be one of page_view, product_view, add_to_cart, checkout_started, search")
	}
	if n := len(in.AnonymousID); n < 8 || n > 128 || strings.ContainsAny(in.AnonymousID, " \t\r\n") {
		return nil, Invalid("anonymous_id", "anonymous_id must be 8 to 128 characters without spaces")
	}
	u, err := url.Parse(in.URL)
	if err != nil || len(in.URL) > 4096 || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, Invalid("url", "url must be an absolute http(s) URL of at most 4096 characters")
	}
	ev := &StorefrontEventRecorded{ShopID: shopID, Type: in.Type, AnonymousID: in.AnonymousID,
		Host: strings.ToLower(u.Hostname()), Path: u.EscapedPath(), OccurredAt: in.OccurredAt.UTC()}
	if ev.Path == "" {
		ev.Path = "/"
	}
	ev.Params = keepAttributionParams(u.Query())
	if in.Referrer != "" {
		if r, err := url.Parse(in.Referrer); err == nil && r.Host != "" {
			ev.ReferrerHost = strings.ToLower(r.Hostname())
		}
	}
	if err := identifyVisitor(shopID, in, ev); err != nil {
		return nil, err
	}
	switch {
	case in.OccurredAt.IsZero():
		ev.OccurredAt = now.UTC()
	case in.OccurredAt.After(now.Add(time.Minute)) || in.OccurredAt.Before(now.Add(-7*24*time.Hour)):
		return nil, Invalid("occurred_at", "occurred_at must be within the last 7 days")
	}
	return ev, nil
}

// keepAttributionParams returns the UTM parameters and click ids of a query
// (lower-cased names, first value, at most 512 characters), nil if none.
func keepAttributionParams(q url.Values) map[string]string {
	var out map[string]string
	for k, vs := range q {
		if k = strings.ToLower(k); attributionParams[k] && len(vs) > 0 && vs[0] != "" && len(vs[0]) <= 512 {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = vs[0]
		}
	}
	return out
}

// NewAttribution keeps what attribution needs of a landing page and a
// referrer: the landing path with only its UTM parameters and click ids,
// those split into UTM and ClickIDs, and the referrer's scheme, host and
// path. Any other query parameter is dropped (it may carry personal data).
func NewAttribution(landing, referring string) Attribution {
	var a Attribution
	if u, err := url.Parse(strings.TrimSpace(landing)); err == nil && landing != "" {
		params := keepAttributionParams(u.Query())
		kept := url.Values{}
		for k, v := range params {
			kept.Set(k, v)
			if name, ok := strings.CutPrefix(k, "utm_"); ok {
				if a.UTM == nil {
					a.UTM = map[string]string{}
				}
				a.UTM[name] = v
			} else {
				if a.ClickIDs == nil {
					a.ClickIDs = map[string]string{}
				}
				a.ClickIDs[k] = v
			}
		}
		a.LandingSite = u.EscapedPath()
		if len(kept) > 0 {
			a.LandingSite += "?" + kept.Encode()
		}
	}
	if r, err := url.Parse(strings.TrimSpace(referring)); err == nil && r.Host != "" {
		a.ReferringSite = (&url.URL{Scheme: r.Scheme, Host: strings.ToLower(r.Host), Path: r.Path}).String()
	}
	return a
}
