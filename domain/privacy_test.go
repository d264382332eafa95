package domain_test

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestExportRetryDelay(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 9: 256 * time.Minute,
		10: 6 * time.Hour, 50: 6 * time.Hour} {
		if got := domain.ExportRetryDelay(attempt, 0); got != want {
			t.Errorf("attempt %d: %v, want %v", attempt, got, want)
		}
	}
	if got := domain.ExportRetryDelay(3, 10*time.Millisecond); got != 40*time.Millisecond {
		t.Errorf("test base: %v", got)
	}
	if got := domain.ExportRetryDelay(100, 10*time.Millisecond); got != 640*time.Millisecond {
		t.Errorf("test base cap: %v", got)
	}
}

func TestChangePrivacySettings(t *testing.T) {
	shop := &domain.Shop{ID: "shop_1", Exists: true}
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	secret := "whsec_0123456789abcdef"
	ev, err := domain.ChangePrivacySettings(shop, "https://dpo.example.com/requests", "dpo@example.com", secret, now)
	if err != nil || ev.ShopID != "shop_1" || ev.DataRequestURL != "https://dpo.example.com/requests" || ev.SigningSecret != secret ||
		!ev.ChangedAt.Equal(now) {
		t.Fatalf("%+v %v", ev, err)
	}
	if _, err := domain.ChangePrivacySettings(&domain.Shop{}, "", "", secret, now); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("unknown shop: %v", err)
	}
	for _, c := range []struct{ url, email, field string }{
		{"ftp://dpo.example.com/", "", "data_request_url"},
		{"https://u:p@dpo.example.com/", "", "data_request_url"},
		{"https:///x", "", "data_request_url"},
		{"https://dpo.example.com/#x", "", "data_request_url"},
		{"", "nobody", "contact_email"},
		{"", "Name <dpo@example.com>", "contact_email"},
	} {
		_, err := domain.ChangePrivacySettings(shop, c.url, c.email, secret, now)
		var de *domain.Error
		if !domainErrorAs(err, &de) || de.Field != c.field {
			t.Errorf("%q %q: %v, want invalid %s", c.url, c.email, err, c.field)
		}
	}
	if _, err := domain.ChangePrivacySettings(shop, "", "", "short", now); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("short secret: %v", err)
	}
	a, b := domain.GDPRRequestID("shop_1", "e1"), domain.GDPRRequestID("shop_1", "e2")
	if a == b || a != domain.GDPRRequestID("shop_1", "e1") || !domain.HasPrefixID(a, domain.PrefixGDPRRequest) {
		t.Errorf("request ids %q %q", a, b)
	}
}

func domainErrorAs(err error, target **domain.Error) bool { return errors.As(err, target) }

// FuzzChangePrivacySettings: a data-request URL is only accepted when it
// is an absolute http(s) URL with a host and without credentials.
func FuzzChangePrivacySettings(f *testing.F) {
	for _, s := range []string{"https://dpo.example.com/x", "http://a.b", "https://u@h/", "//h/x", "https://[::1]/", "HTTPS://A.B/"} {
		f.Add(s, "dpo@example.com")
	}
	shop := &domain.Shop{ID: "shop_1", Exists: true}
	f.Fuzz(func(t *testing.T, raw, email string) {
		ev, err := domain.ChangePrivacySettings(shop, raw, email, "whsec_0123456789abcdef", time.Unix(0, 0))
		if err != nil || raw == "" {
			return
		}
		u, perr := url.Parse(ev.DataRequestURL)
		if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || u.User != nil {
			t.Fatalf("accepted %q", raw)
		}
	})
}
