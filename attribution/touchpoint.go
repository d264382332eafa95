package attribution

import (
	"cmp"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/domain"
)

// Kind is what produced a touchpoint.
type Kind string

// Touchpoint kinds.
const (
	// KindPageView: a page seen by the storefront pixel (page_view,
	// product_view and search events).
	KindPageView Kind = "page_view"
	// KindCart: the pixel's add_to_cart.
	KindCart Kind = "cart"
	// KindCheckout: a checkout (CheckoutRecorded, or the pixel's
	// checkout_started).
	KindCheckout Kind = "checkout"
	// KindOrderLanding: the landing site and referrer an order carries
	// (OrderRecorded), at the order's time.
	KindOrderLanding Kind = "order_landing"
)

// UTM holds a landing URL's campaign parameters, as sent (trimmed).
type UTM struct {
	Source   string `json:"source,omitempty"`
	Medium   string `json:"medium,omitempty"`
	Campaign string `json:"campaign,omitempty"`
	Term     string `json:"term,omitempty"`
	Content  string `json:"content,omitempty"`
}

// ClickIDs holds the advertising click ids of a landing URL.
type ClickIDs struct {
	GCLID   string `json:"gclid,omitempty"`     // Google Ads
	GBRAID  string `json:"gbraid,omitempty"`    // Google Ads, iOS app-to-web
	WBRAID  string `json:"wbraid,omitempty"`    // Google Ads, iOS web-to-app
	FBCLID  string `json:"fbclid,omitempty"`    // Meta (also on organic link clicks)
	TTCLID  string `json:"ttclid,omitempty"`    // TikTok Ads
	MSCLKID string `json:"msclkid,omitempty"`   // Microsoft Advertising
	LiFatID string `json:"li_fat_id,omitempty"` // LinkedIn Ads
}

// Landing is what a touchpoint keeps of a visit's landing page and
// referrer: nothing else of the URL (other query parameters may carry
// personal data), and only the referrer's host.
type Landing struct {
	Path     string   `json:"landing_path,omitempty"` // escaped path, no query
	UTM      UTM      `json:"utm"`
	ClickIDs ClickIDs `json:"click_ids"`
	// ReferrerHost is lower-case, without port, trailing dot or "www.";
	// empty when there is no referrer or it is the shop itself.
	ReferrerHost string `json:"referrer_host,omitempty"`
}

// Touchpoint is one marketing contact of a visitor or customer with the shop.
type Touchpoint struct {
	// ID identifies the touchpoint for the caller (an event id, a checkout
	// or order id); it breaks ties between touchpoints at the same instant.
	ID          string    `json:"id,omitempty"`
	ShopID      string    `json:"shop_id,omitempty"`
	CustomerID  string    `json:"customer_id,omitempty"`
	AnonymousID string    `json:"anonymous_id,omitempty"`
	OccurredAt  time.Time `json:"occurred_at"`
	Kind        Kind      `json:"kind"`
	Landing
}

// maxParam is the longest parameter value kept (as domain does).
const maxParam = 512

// setParam stores a recognised attribution parameter (name lower-cased)
// unless it is already set; it reports whether name is one.
func (l *Landing) setParam(name, value string) bool {
	var dst *string
	switch name {
	case "utm_source":
		dst = &l.UTM.Source
	case "utm_medium":
		dst = &l.UTM.Medium
	case "utm_campaign":
		dst = &l.UTM.Campaign
	case "utm_term":
		dst = &l.UTM.Term
	case "utm_content":
		dst = &l.UTM.Content
	case "gclid":
		dst = &l.ClickIDs.GCLID
	case "gbraid":
		dst = &l.ClickIDs.GBRAID
	case "wbraid":
		dst = &l.ClickIDs.WBRAID
	case "fbclid":
		dst = &l.ClickIDs.FBCLID
	case "ttclid":
		dst = &l.ClickIDs.TTCLID
	case "msclkid":
		dst = &l.ClickIDs.MSCLKID
	case "li_fat_id":
		dst = &l.ClickIDs.LiFatID
	default:
		return false
	}
	value = strings.TrimSpace(strings.ToValidUTF8(value, ""))
	if *dst == "" && len(value) <= maxParam {
		*dst = value
	}
	return true
}

// ParseLanding extracts a Landing from a landing page and a referrer as
// platforms send them. landing may be an absolute URL, a path with a query
// ("/p/x?utm_source=…", as an order's landing_site) or a bare query; the
// fragment is ignored, parameter names are case-insensitive, the first
// non-empty value wins, values over 512 bytes are dropped. referrer may be a
// URL, "android-app://package/…" or a bare host. Malformed input yields
// what could be read, never an error: outside input is not trusted to be
// well formed.
func ParseLanding(landing, referrer string) Landing {
	var l Landing
	s := strings.TrimSpace(landing)
	s, _, _ = strings.Cut(s, "#")
	before, query, _ := strings.Cut(s, "?")
	if i := strings.Index(before, "://"); i >= 0 {
		before = before[i+3:]
		if j := strings.IndexByte(before, '/'); j >= 0 {
			before = before[j:]
		} else {
			before = ""
		}
	}
	if before != "" {
		if !strings.HasPrefix(before, "/") {
			before = "/" + before
		}
		l.Path = strings.ToValidUTF8(before, "")
	}
	if query != "" {
		// ParseQuery returns every well-formed pair even when some are not.
		values, _ := url.ParseQuery(query)
		for _, name := range sortedKeys(values) {
			for _, v := range values[name] {
				if v != "" {
					l.setParam(strings.ToLower(name), v)
				}
			}
		}
	}
	l.ReferrerHost = referrerHost(referrer)
	return l
}

// sortedKeys returns the keys of a query in a fixed order, so that the
// first value of a parameter sent twice under different cases
// ("UTM_SOURCE", "utm_source") does not depend on map order.
func sortedKeys(v url.Values) []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	// Insertion sort: queries have a handful of keys.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// referrerHost returns the normalised host of a referrer URL or bare host,
// "" when there is none or it is malformed.
func referrerHost(ref string) string {
	s := strings.TrimSpace(ref)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	} else {
		s = strings.TrimPrefix(s, "//")
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	return normalizeHost(s)
}

// normalizeHost lower-cases a host and drops its port, trailing dots and
// leading "www."; it returns "" for a host with characters no host has.
func normalizeHost(h string) string {
	if strings.HasPrefix(h, "[") { // IPv6 literal
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return ""
		}
		h = h[1:end]
	} else if i := strings.IndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	h = strings.TrimRight(strings.ToLower(h), ".")
	for strings.HasPrefix(h, "www.") {
		h = h[len("www."):]
	}
	if h == "" || len(h) > 253 || !utf8.ValidString(h) {
		return ""
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' || r == ':' || r >= 0x80) {
			return ""
		}
	}
	return h
}

// storefrontKinds maps the pixel's event types to touchpoint kinds.
var storefrontKinds = map[string]Kind{
	"page_view": KindPageView, "product_view": KindPageView, "search": KindPageView,
	"add_to_cart": KindCart, "checkout_started": KindCheckout,
}

// FromStorefrontEvent returns the touchpoint of a pixel event; id is the
// event's id (the event itself carries none). A referrer on the page's own
// host (internal navigation) is dropped.
func FromStorefrontEvent(id string, ev *domain.StorefrontEventRecorded) Touchpoint {
	kind, ok := storefrontKinds[ev.Type]
	if !ok {
		kind = KindPageView
	}
	tp := Touchpoint{ID: id, ShopID: ev.ShopID, AnonymousID: ev.AnonymousID, OccurredAt: ev.OccurredAt.UTC(), Kind: kind}
	tp.Path = strings.ToValidUTF8(ev.Path, "")
	for _, name := range sortedKeys(toValues(ev.Params)) {
		tp.setParam(strings.ToLower(name), ev.Params[name])
	}
	if ref := normalizeHost(ev.ReferrerHost); ref != normalizeHost(ev.Host) {
		tp.ReferrerHost = ref
	}
	return tp
}

func toValues(m map[string]string) url.Values {
	v := make(url.Values, len(m))
	for k, s := range m {
		v[k] = []string{s}
	}
	return v
}

// fromAttribution reads a domain.Attribution: its landing site and referrer,
// then its UTM and click-id maps for what the landing site lacked.
func fromAttribution(a domain.Attribution) Landing {
	l := ParseLanding(a.LandingSite, a.ReferringSite)
	for _, name := range sortedKeys(toValues(a.UTM)) {
		l.setParam("utm_"+strings.ToLower(name), a.UTM[name])
	}
	for _, name := range sortedKeys(toValues(a.ClickIDs)) {
		l.setParam(strings.ToLower(name), a.ClickIDs[name])
	}
	return l
}

// FromCheckout returns the touchpoint of a checkout, at its creation (every
// later snapshot of the same checkout gives the same touchpoint, ID the
// checkout id). ok is false for a stale snapshot.
func FromCheckout(ev *domain.CheckoutRecorded) (tp Touchpoint, ok bool) {
	if ev.Stale {
		return Touchpoint{}, false
	}
	at := ev.CreatedAt
	if at.IsZero() {
		at = ev.UpdatedAt
	}
	return Touchpoint{ID: ev.CheckoutID, ShopID: ev.ShopID, CustomerID: ev.CustomerID, OccurredAt: at.UTC(),
		Kind: KindCheckout, Landing: fromAttribution(ev.Attribution)}, true
}

// FromOrder returns the touchpoint of an order's landing site and referrer,
// at the order's creation (ID the order id). ok is false for a stale
// snapshot and for an order without any landing data (point of sale, draft
// and API orders): it is not a visit.
func FromOrder(ev *domain.OrderRecorded) (tp Touchpoint, ok bool) {
	if ev.Stale {
		return Touchpoint{}, false
	}
	l := fromAttribution(ev.Attribution)
	if l == (Landing{}) {
		return Touchpoint{}, false
	}
	return Touchpoint{ID: ev.OrderID, ShopID: ev.ShopID, CustomerID: ev.CustomerID, OccurredAt: ev.CreatedAt.UTC(),
		Kind: KindOrderLanding, Landing: l}, true
}

// compareTouchpoints is the total order touchpoints are processed in:
// chronological, then by every field, so that the results never depend on
// the order of the input (touchpoints equal in every field are
// interchangeable).
func compareTouchpoints(a, b *Touchpoint) int {
	if c := a.OccurredAt.Compare(b.OccurredAt); c != 0 {
		return c
	}
	return cmp.Or(
		cmp.Compare(a.ID, b.ID),
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.ShopID, b.ShopID),
		cmp.Compare(a.CustomerID, b.CustomerID),
		cmp.Compare(a.AnonymousID, b.AnonymousID),
		cmp.Compare(a.Path, b.Path),
		cmp.Compare(a.ReferrerHost, b.ReferrerHost),
		cmp.Compare(a.UTM.Source, b.UTM.Source),
		cmp.Compare(a.UTM.Medium, b.UTM.Medium),
		cmp.Compare(a.UTM.Campaign, b.UTM.Campaign),
		cmp.Compare(a.UTM.Term, b.UTM.Term),
		cmp.Compare(a.UTM.Content, b.UTM.Content),
		cmp.Compare(a.ClickIDs.GCLID, b.ClickIDs.GCLID),
		cmp.Compare(a.ClickIDs.GBRAID, b.ClickIDs.GBRAID),
		cmp.Compare(a.ClickIDs.WBRAID, b.ClickIDs.WBRAID),
		cmp.Compare(a.ClickIDs.FBCLID, b.ClickIDs.FBCLID),
		cmp.Compare(a.ClickIDs.TTCLID, b.ClickIDs.TTCLID),
		cmp.Compare(a.ClickIDs.MSCLKID, b.ClickIDs.MSCLKID),
		cmp.Compare(a.ClickIDs.LiFatID, b.ClickIDs.LiFatID),
	)
}
