package domain_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/domain"
)

func FuzzParseAdminToken(f *testing.F) {
	f.Add("copt_live_" + strings.Repeat("A", 32))
	f.Add("copt_test_" + strings.Repeat("z", 31) + "!")
	f.Add("copt_live")
	f.Add("pk_live_" + strings.Repeat("0", 32))
	f.Fuzz(func(t *testing.T, raw string) {
		env, ok := domain.ParseAdminToken(raw)
		if !ok {
			return
		}
		if env != "live" && env != "test" || len(raw) != len("copt_")+len(env)+1+32 || !strings.HasPrefix(raw, "copt_"+env+"_") {
			t.Fatalf("accepted %q as %q", raw, env)
		}
		if _, also := domain.ParseCredential(domain.PublicKeyPrefix, raw); also {
			t.Fatalf("%q is both an admin token and a public key", raw)
		}
	})
}

func FuzzExpandImageScopes(f *testing.F) {
	f.Add("images:write,usage:read")
	f.Add("*")
	f.Add("")
	f.Add("images:read,images:delete")
	f.Fuzz(func(t *testing.T, list string) {
		got, err := domain.ExpandImageScopes(strings.Split(list, ","))
		if err != nil {
			if domain.ErrorCode(err) != domain.CodeInvalid {
				t.Fatalf("non-validation error %v", err)
			}
			return
		}
		seen := map[domain.Scope]bool{}
		for i, s := range got {
			if seen[s] {
				t.Fatalf("duplicate %s in %v", s, got)
			}
			seen[s] = true
			if s == domain.ScopeAll && len(got) != 1 {
				t.Fatalf("* not collapsed: %v", got)
			}
			if i > 0 && s == "usage:read" {
				t.Fatalf("not in catalogue order: %v", got)
			}
		}
		if seen["images:write"] && !seen["images:read"] {
			t.Fatalf("implication missing: %v", got)
		}
	})
}

// A subscription's settings come from a shop: whatever they are, the
// validation never panics, and what it accepts is an absolute http(s)
// URL without credentials, known event types sorted without repeats, and
// a description within its limit.
func FuzzNewWebhookEndpoint(f *testing.F) {
	f.Add("https://hooks.example.com/cgp", "order.created,customer.redacted", "ERP")
	f.Add("https://user:pw@hooks.example.com/", "*", "")
	f.Add("http://[::1]:80/x#frag", "order.created,order.created", strings.Repeat("é", 501))
	f.Add(" https://x.example.com ", "*,order.paid", "\xff")
	f.Fuzz(func(t *testing.T, raw, types, description string) {
		ep, err := domain.NewWebhookEndpoint(raw, strings.Split(types, ","), description)
		if err != nil {
			if domain.ErrorCode(err) != domain.CodeInvalid {
				t.Fatalf("error %v is not a validation failure", err)
			}
			return
		}
		u, perr := url.Parse(ep.URL)
		if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
			t.Fatalf("accepted URL %q", ep.URL)
		}
		for i, et := range ep.EventTypes {
			if et != domain.WebhookAllEvents && !domain.IsWebhookEventType(et) || i > 0 && ep.EventTypes[i-1] >= et {
				t.Fatalf("accepted types %v", ep.EventTypes)
			}
		}
	})
}
