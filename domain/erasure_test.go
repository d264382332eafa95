package domain_test

import (
	"slices"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

func TestErasureSubjects(t *testing.T) {
	c := domain.PrivacyCustomer{CustomerID: domain.CustomerIDFromExternal("shop_1", "42"), ExternalID: "42",
		Email: "a@example.com", Phone: "+1 (555) 010-0000"}
	subjects, messaging := domain.ErasureSubjects("shop_1", c, []string{"9001", "9001"})
	if messaging != domain.CustomerIDFromPhone("shop_1", "15550100000") {
		t.Fatalf("messaging identity %q", messaging)
	}
	want := []string{c.CustomerID, messaging, domain.GuestSubject("shop_1", "9001")}
	if !slices.Equal(subjects, want) {
		t.Fatalf("subjects %v, want %v (the customer, its phone's identity, each listed order once)", subjects, want)
	}
	// Without a customer id the request's own subject is shredded too, and
	// without a phone there is no messaging identity.
	anon := domain.PrivacyCustomer{Email: "b@example.com"}
	subjects, messaging = domain.ErasureSubjects("shop_1", anon, nil)
	if messaging != "" || len(subjects) != 1 || !domain.HasPrefixID(subjects[0], domain.PrefixCustomer) {
		t.Fatalf("anonymous request: %v %q", subjects, messaging)
	}
}

func TestPhoneDigits(t *testing.T) {
	for in, want := range map[string]string{"+31 6 1234 5678": "31612345678", "": "", "none": "", "٣٤": ""} {
		if got := domain.PhoneDigits(in); got != want {
			t.Errorf("PhoneDigits(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzPhoneDigits(f *testing.F) {
	for _, s := range []string{"+1 555 0100", "", "abc", "+٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := domain.PhoneDigits(s)
		for _, r := range d {
			if r < '0' || r > '9' {
				t.Fatalf("PhoneDigits(%q) = %q holds %q", s, d, r)
			}
		}
		if domain.PhoneDigits(d) != d {
			t.Fatalf("PhoneDigits is not idempotent on %q", s)
		}
	})
}

func TestEnrollmentExit(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var a domain.JourneyEnrollments
	if a.Exit("shop_1", "jrn_1", "cus_1", domain.ExitCustomerErased, now) != nil {
		t.Fatal("an exit without an enrollment")
	}
	ev, err := a.Enroll(domain.Enrollment{ShopID: "shop_1", JourneyID: "jrn_1", CustomerID: "cus_1", TriggerEventID: "e1"}, now)
	if err != nil || ev == nil {
		t.Fatal(ev, err)
	}
	a.Apply(ev)
	exit := a.Exit("shop_1", "jrn_1", "cus_1", domain.ExitCustomerErased, now)
	if exit == nil || exit.EnrollmentID != ev.EnrollmentID || exit.Reason != domain.ExitCustomerErased {
		t.Fatalf("exit %+v", exit)
	}
	a.Apply(exit)
	if a.Exit("shop_1", "jrn_1", "cus_1", domain.ExitCustomerErased, now) != nil {
		t.Fatal("an enrollment exited twice")
	}
}
