package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"net/mail"
	"slices"
	"strings"
	"time"
)

// Stream ids. Streams are "<category>-<id>"; ids never carry personal data.
func AccountStream(id string) string  { return "account-" + id }
func ShopStream(id string) string     { return "shop-" + id }
func TokenStream(id string) string    { return "token-" + id }
func CustomerStream(id string) string { return "customer-" + id }

// ShopDomainStream is the stream that claims a shop domain, so two shops
// cannot share one. Its id is a hash of the normalised domain.
func ShopDomainStream(domain string) string {
	sum := sha256.Sum256([]byte(NormalizeDomain(domain)))
	return "shopdomain-" + hex.EncodeToString(sum[:16])
}

// AccountCreated: an agency or enterprise account (or a merchant's own)
// that owns shops.
type AccountCreated struct {
	AccountID string    `json:"account_id"`
	Name      string    `json:"name"`
	Plan      Plan      `json:"plan"`
	CreatedAt time.Time `json:"created_at"`
}

// EventType implements Event.
func (AccountCreated) EventType() string { return "AccountCreated" }

// ShopDomainClaimed reserves a domain for a shop.
type ShopDomainClaimed struct {
	ShopID string `json:"shop_id"`
	Domain string `json:"domain"`
}

// EventType implements Event.
func (ShopDomainClaimed) EventType() string { return "ShopDomainClaimed" }

// ShopCreated: a shop installed the platform.
type ShopCreated struct {
	ShopID        string    `json:"shop_id"`
	AccountID     string    `json:"account_id"`
	Domain        string    `json:"domain"`
	Plan          Plan      `json:"plan"`
	WebhookSecret string    `json:"webhook_secret"`
	ContactEmail  string    `json:"contact_email,omitempty"`
	CORSAllowList []string  `json:"cors_allow_list,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
}

// EventType implements Event.
func (ShopCreated) EventType() string { return "ShopCreated" }

// Account is the account aggregate.
type Account struct {
	ID     string
	Name   string
	Plan   Plan
	Exists bool
}

// Apply folds an event into the account.
func (a *Account) Apply(e Event) {
	if ev, ok := e.(*AccountCreated); ok {
		a.ID, a.Name, a.Plan, a.Exists = ev.AccountID, ev.Name, ev.Plan, true
	}
}

// CreateAccount decides the creation of a new account.
func CreateAccount(id, name, plan string, now time.Time) (*AccountCreated, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 200 {
		return nil, Invalid("name", "name must be 1 to 200 characters")
	}
	p, err := ParsePlan(plan)
	if err != nil {
		return nil, err
	}
	return &AccountCreated{AccountID: id, Name: name, Plan: p, CreatedAt: now.UTC()}, nil
}

// Shop is the shop aggregate.
type Shop struct {
	ID            string
	AccountID     string
	Domain        string
	Plan          Plan
	WebhookSecret string
	Exists        bool
	Uninstalled   bool
	// UninstalledAt and RetentionDueAt are set while Uninstalled.
	UninstalledAt, RetentionDueAt time.Time
	// Erased: ShopErased was recorded; Exists is false from then on.
	Erased bool
	// allowed is the CORS allow-list (hosts), see AllowedOrigins.
	allowed []string
	// Granted is the platform scope grant as last reported (AppInstalled,
	// app/scopes_update); ScopesKnown is false until one was.
	Granted     []string
	ScopesKnown bool
}

// Apply folds an event into the shop.
func (s *Shop) Apply(e Event) {
	s.applyOrigins(e)
	switch ev := e.(type) {
	case *ShopCreated:
		s.ID, s.AccountID, s.Domain, s.Plan, s.WebhookSecret, s.Exists = ev.ShopID, ev.AccountID, ev.Domain, ev.Plan, ev.WebhookSecret, true
	case *ShopPlanChanged:
		s.Plan = ev.Plan
	case *AppUninstalled:
		s.Uninstalled, s.UninstalledAt, s.RetentionDueAt = true, ev.UninstalledAt, ev.RetentionDueAt
	case *AppReinstalled:
		s.Uninstalled, s.UninstalledAt, s.RetentionDueAt = false, time.Time{}, time.Time{}
	case *AppInstalled:
		s.Granted, s.ScopesKnown = ev.Granted, true
		if ev.WebhookSecret != "" {
			s.WebhookSecret = ev.WebhookSecret
		}
	case *ShopScopesUpdated:
		s.Granted, s.ScopesKnown = ev.Granted, true
	case *ShopErased:
		s.Exists, s.Erased = false, true
	}
}

// ChangePlan decides a plan change; the same plan changes nothing.
func (s *Shop) ChangePlan(plan string, now time.Time) (*ShopPlanChanged, error) {
	if !s.Exists {
		return nil, NotFound("shop")
	}
	p, err := ParsePlan(plan)
	if err != nil {
		return nil, err
	}
	if p == s.Plan {
		return nil, nil
	}
	return &ShopPlanChanged{ShopID: s.ID, Plan: p, ChangedAt: now.UTC()}, nil
}

// NewShop is what CreateShop needs to know.
type NewShop struct {
	ID, Domain, Plan, WebhookSecret, ContactEmail string
	CORSAllowList                                 []string
}

// CreateShop decides the creation of a shop under account.
func CreateShop(account *Account, in NewShop, now time.Time) (*ShopCreated, error) {
	if !account.Exists {
		return nil, NotFound("account")
	}
	domain := NormalizeDomain(in.Domain)
	if !ValidDomain(domain) {
		return nil, Invalid("domain", "not a valid shop domain")
	}
	p, err := ParsePlan(in.Plan)
	if err != nil {
		return nil, err
	}
	if len(in.WebhookSecret) < 16 || len(in.WebhookSecret) > 256 {
		return nil, Invalid("webhook_secret", "webhook secret must be 16 to 256 characters")
	}
	if in.ContactEmail != "" {
		if _, err := mail.ParseAddress(in.ContactEmail); err != nil {
			return nil, Invalid("contact_email", "not a valid e-mail address")
		}
	}
	cors := make([]string, 0, len(in.CORSAllowList))
	for _, d := range in.CORSAllowList {
		if strings.Contains(d, "://") {
			// Written as an origin: the allow-list's origin rule
			// (ParseAllowedOrigin), so http:// or a path is refused,
			// not stripped.
			host, err := ParseAllowedOrigin("cors_allow_list", d)
			if err != nil {
				return nil, err
			}
			d = host
		}
		d = NormalizeDomain(d)
		if !ValidDomain(d) {
			return nil, Invalid("cors_allow_list", "not a valid domain")
		}
		if !slices.Contains(cors, d) {
			cors = append(cors, d)
		}
	}
	if len(cors) > MaxAllowedOrigins {
		return nil, Invalid("cors_allow_list", "the allow-list holds at most %d origins", MaxAllowedOrigins)
	}
	return &ShopCreated{
		ShopID: in.ID, AccountID: account.ID, Domain: domain, Plan: p,
		WebhookSecret: in.WebhookSecret, ContactEmail: in.ContactEmail,
		CORSAllowList: cors, CreatedAt: now.UTC(),
	}, nil
}

// NormalizeDomain lower-cases a domain and strips a scheme, path and
// trailing dot.
func NormalizeDomain(d string) string {
	d = strings.ToLower(strings.TrimSpace(d))
	if i := strings.Index(d, "://"); i >= 0 {
		d = d[i+3:]
	}
	if i := strings.IndexAny(d, "/?#"); i >= 0 {
		d = d[:i]
	}
	return strings.TrimSuffix(d, ".")
}

// ValidDomain reports whether d is a shop domain: a public DNS name in
// lower case, without port, of at least two labels, each an RFC 1123
// label (letters, digits and inner hyphens, at most 63 characters), at
// most 253 characters in all. An IP address (its last label would be a
// number) and the names of local networks (localhost and *.localhost,
// *.local, *.internal, *.localdomain, *.lan, *.home, *.arpa, *.invalid)
// are not. That the name is registrable, not a public suffix itself
// (com, co.uk, myshopify.com), is checked by the command with the
// public suffix list.
func ValidDomain(d string) bool {
	if len(d) == 0 || len(d) > 253 {
		return false
	}
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	tld := labels[len(labels)-1]
	if strings.Trim(tld, "0123456789") == "" {
		return false // an IPv4 address, or a name resolvers would read as one
	}
	switch tld {
	case "localhost", "local", "internal", "localdomain", "lan", "home", "arpa", "invalid":
		return false
	}
	return true
}
