package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestLifecycleStage(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	cases := []struct {
		orders int
		last   time.Time
		want   string
	}{
		{0, time.Time{}, domain.StageProspect},
		{1, now.Add(-10 * day), domain.StageNew},
		{2, now.Add(-10 * day), domain.StageActive},
		{3, now.Add(-90 * day), domain.StageActive},
		{4, now.Add(-1 * day), domain.StageLoyal},
		{9, time.Time{}, domain.StageLoyal},
		{1, now.Add(-90*day - time.Second), domain.StageAtRisk},
		{7, now.Add(-180 * day), domain.StageAtRisk},
		{7, now.Add(-180*day - time.Second), domain.StageChurned},
	}
	for _, c := range cases {
		if got := domain.LifecycleStage(c.orders, c.last, now); got != c.want {
			t.Errorf("LifecycleStage(%d, %v) = %s, want %s", c.orders, now.Sub(c.last), got, c.want)
		}
	}
}

func TestParseAmount(t *testing.T) {
	for in, want := range map[string]string{"199.90": "199.90", "5": "5.00", "-0.5": "-0.50", "0.1234": "0.1234", "1000": "1000.00"} {
		a, err := domain.ParseAmount(in)
		if err != nil {
			t.Fatalf("ParseAmount(%q): %v", in, err)
		}
		if a.String() != want {
			t.Errorf("ParseAmount(%q).String() = %q, want %q", in, a.String(), want)
		}
	}
	if a, _ := domain.ParseAmount("12.34"); a.Float() != 12.34 {
		t.Errorf("Float = %v", a.Float())
	}
	for _, bad := range []string{"", "abc", "1.23456", "1,00", "--1", ".", "1e5"} {
		if _, err := domain.ParseAmount(bad); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("ParseAmount(%q) err = %v, want validation failure", bad, err)
		}
	}
}

func TestParseAdminScopes(t *testing.T) {
	got, err := domain.ParseAdminScopes([]string{"orders:read", "customers:read", "orders:read"})
	if err != nil || len(got) != 2 || got[0] != "customers:read" || got[1] != "orders:read" {
		t.Fatalf("got %v, %v; want catalogue order without duplicates", got, err)
	}
	if got, _ := domain.ParseAdminScopes([]string{"customers:read", "*"}); len(got) != 1 || got[0] != domain.ScopeAll {
		t.Fatalf("wildcard did not collapse: %v", got)
	}
	var de *domain.Error
	if _, err := domain.ParseAdminScopes([]string{"customers:delete"}); !errors.As(err, &de) || de.Field != "scopes" {
		t.Fatalf("unknown scope: err = %v", err)
	}
	if domain.Grants([]domain.Scope{"customers:read"}, "customers:write") {
		t.Fatal("read granted write")
	}
	if !domain.Grants([]domain.Scope{domain.ScopeAll}, "audit:read") {
		t.Fatal("* did not grant audit:read")
	}
}

func TestAdminTokenSyntax(t *testing.T) {
	raw, err := domain.NewAdminToken(domain.EnvTest)
	if err != nil {
		t.Fatal(err)
	}
	if env, ok := domain.ParseAdminToken(raw); !ok || env != domain.EnvTest {
		t.Fatalf("ParseAdminToken(%q) = %q, %v", raw, env, ok)
	}
	if len(raw) != len("copt_test_")+32 {
		t.Fatalf("token length %d", len(raw))
	}
	other, _ := domain.NewAdminToken(domain.EnvTest)
	if other == raw {
		t.Fatal("two tokens are equal")
	}
	for _, bad := range []string{"", "copt_live_", "copt_prod_" + strings.Repeat("a", 32), "copt_live_" + strings.Repeat("a", 31),
		"copt_live_" + strings.Repeat("a", 31) + "!", "pk_live_" + strings.Repeat("a", 32)} {
		if _, ok := domain.ParseAdminToken(bad); ok {
			t.Errorf("ParseAdminToken(%q) accepted", bad)
		}
	}
	if domain.HashToken(raw) == domain.HashToken(other) || len(domain.HashToken(raw)) != 64 {
		t.Fatal("hash is not a per-token SHA-256")
	}
}

func TestCustomerDecisions(t *testing.T) {
	var c domain.Customer
	if _, err := c.SetTags([]string{"vip"}); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("tags on a missing customer: %v", err)
	}
	ev := c.RecordProfile("shop_1", "cus_1", domain.CustomerProfile{ExternalID: "42", PlatformTags: []string{"a"}})
	if _, ok := ev.(*domain.CustomerCreated); !ok {
		t.Fatalf("first snapshot is %T, want CustomerCreated", ev)
	}
	c.Apply(ev)
	if ev := c.RecordProfile("shop_1", "cus_1", domain.CustomerProfile{ExternalID: "42"}); ev.EventType() != "CustomerUpdated" {
		t.Fatalf("second snapshot is %s", ev.EventType())
	}
	set, err := c.SetTags([]string{" vip ", "vip", "wholesale"})
	if err != nil || strings.Join(set.Tags, ",") != "vip,wholesale" {
		t.Fatalf("SetTags = %v, %v", set, err)
	}
	for _, bad := range [][]string{nil, {""}, {strings.Repeat("x", 256)}, make([]string, 251)} {
		if _, err := c.SetTags(bad); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("SetTags(%d tags) err = %v", len(bad), err)
		}
	}
}

func TestCustomerIDFromExternalIsStableAndScoped(t *testing.T) {
	a := domain.CustomerIDFromExternal("shop_1", "42")
	if a != domain.CustomerIDFromExternal("shop_1", "42") {
		t.Fatal("not deterministic")
	}
	if a == domain.CustomerIDFromExternal("shop_2", "42") {
		t.Fatal("two shops share a customer id")
	}
	if !domain.HasPrefixID(a, domain.PrefixCustomer) || strings.Contains(a, "42") {
		t.Fatalf("id %q", a)
	}
}

func TestShopValidation(t *testing.T) {
	acc := &domain.Account{ID: "acc_1", Exists: true}
	ok := domain.NewShop{ID: "shop_1", Domain: "HTTPS://Example.MyShop.com/", Plan: "agency", WebhookSecret: strings.Repeat("s", 16)}
	ev, err := domain.CreateShop(acc, ok, time.Now())
	if err != nil || ev.Domain != "example.myshop.com" {
		t.Fatalf("CreateShop = %v, %v", ev, err)
	}
	bad := []struct {
		field string
		mod   func(*domain.NewShop)
	}{
		{"domain", func(s *domain.NewShop) { s.Domain = "not a domain" }},
		{"plan", func(s *domain.NewShop) { s.Plan = "gold" }},
		{"webhook_secret", func(s *domain.NewShop) { s.WebhookSecret = "short" }},
		{"contact_email", func(s *domain.NewShop) { s.ContactEmail = "nope" }},
	}
	for _, b := range bad {
		in := ok
		b.mod(&in)
		var de *domain.Error
		if _, err := domain.CreateShop(acc, in, time.Now()); !errors.As(err, &de) || de.Field != b.field {
			t.Errorf("%s: err = %v", b.field, err)
		}
	}
	if _, err := domain.CreateShop(&domain.Account{}, ok, time.Now()); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("missing account: %v", err)
	}
}

// renamed is a test event whose v1 called the field "label".
type renamed struct {
	Name string `json:"name"`
}

func (renamed) EventType() string { return "TestRenamed" }

func TestCatalogueUpcastsOldVersions(t *testing.T) {
	cat := domain.NewCatalogue(domain.EventSpec{
		Name: "TestRenamed", Version: 2, New: func() domain.Event { return &renamed{} },
		Upcasters: map[int]domain.Upcaster{1: func(old json.RawMessage) (json.RawMessage, error) {
			var v1 struct {
				Label string `json:"label"`
			}
			if err := json.Unmarshal(old, &v1); err != nil {
				return nil, err
			}
			return json.Marshal(renamed{Name: v1.Label})
		}},
	})
	ev, err := cat.Decode("TestRenamed", 1, json.RawMessage(`{"label":"old"}`))
	if err != nil || ev.(*renamed).Name != "old" {
		t.Fatalf("upcast v1: %v %v", ev, err)
	}
	ev, err = cat.Decode("TestRenamed", 2, json.RawMessage(`{"name":"new"}`))
	if err != nil || ev.(*renamed).Name != "new" {
		t.Fatalf("decode v2: %v %v", ev, err)
	}
	if _, err := cat.Decode("TestRenamed", 3, nil); err == nil {
		t.Fatal("future version accepted")
	}
	if _, err := cat.Decode("Nope", 1, nil); !errors.Is(err, domain.ErrUnknownEventType) {
		t.Fatalf("unknown type: %v", err)
	}
}

func TestEventsCatalogueNamesAreExplicit(t *testing.T) {
	cat := domain.Events()
	for _, name := range cat.Names() {
		spec, _ := cat.Spec(name)
		if spec.New().EventType() != name {
			t.Errorf("%s constructs %s", name, spec.New().EventType())
		}
	}
	if len(cat.Names()) < 8 {
		t.Fatalf("catalogue has %d types", len(cat.Names()))
	}
}

// TestCustomerStaleSnapshot: a platform profile older than the one applied
// is an update marked stale, and folding it changes no freshness; one
// without updated_at is never stale.
func TestCustomerStaleSnapshot(t *testing.T) {
	at := func(day int) time.Time { return time.Date(2026, 10, day, 10, 0, 0, 0, time.UTC) }
	var c domain.Customer
	c.Apply(c.RecordProfile("shop_1", "cus_1", domain.CustomerProfile{ExternalID: "42", PlatformUpdated: at(3)}))
	ev := c.RecordProfile("shop_1", "cus_1", domain.CustomerProfile{ExternalID: "42", PlatformUpdated: at(2)})
	if up, ok := ev.(*domain.CustomerUpdated); !ok || !up.Stale {
		t.Fatalf("older snapshot: %#v, want a stale CustomerUpdated", ev)
	}
	c.Apply(ev)
	if !c.Profile.UpdatedAt.Equal(at(3)) {
		t.Fatalf("a stale snapshot moved the freshness to %v", c.Profile.UpdatedAt)
	}
	for _, p := range []time.Time{at(3), at(4), {}} {
		if ev := c.RecordProfile("shop_1", "cus_1", domain.CustomerProfile{ExternalID: "42", PlatformUpdated: p}); ev.(*domain.CustomerUpdated).Stale {
			t.Errorf("snapshot of %v is stale", p)
		}
	}
}
