package domain_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cgp-platform/cgp/domain"
)

func TestReviewEventsAreInTheCatalogue(t *testing.T) {
	c := domain.Events()
	for _, name := range []string{"ReviewSubmitted", "ReviewPublished", "ReviewRejected", "ReviewReplied", "ReviewMarkedHelpful"} {
		if c.Version(name) != 1 {
			t.Errorf("%s is not in the catalogue", name)
		}
	}
	var p domain.Personal = domain.ReviewSubmitted{CustomerID: "cus_1"}
	if p.Subject() != "cus_1" || strings.Join(p.PersonalFields(), ",") != "title,body,author_name,author_email" {
		t.Fatalf("the review's personal fields: %s %v", p.Subject(), p.PersonalFields())
	}
}

func TestSubmitReview(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	draft := func(edit func(d *domain.ReviewDraft)) domain.ReviewDraft {
		d := domain.ReviewDraft{ShopID: "shop_1", CustomerID: "cus_1", ProductID: "prd_1", VerifyingOrderID: "ord_1",
			Proof: domain.ReviewProofToken, Rating: 4, Title: "<b>Nice</b>", Body: "Good <script>x</script>see http://spam.example.net now",
			AuthorName: " Noor ", AuthorEmail: "Noor@Example.com"}
		if edit != nil {
			edit(&d)
		}
		return d
	}
	evs, err := domain.SubmitReview(&domain.Review{}, draft(nil), now)
	if err != nil || len(evs) != 2 {
		t.Fatalf("verified 4 stars: %v %v", evs, err)
	}
	s := evs[0].(*domain.ReviewSubmitted)
	if s.ReviewID != domain.ReviewID("shop_1", "cus_1", "prd_1") || s.Title != "Nice" || s.Body != "Good xsee now" || s.AuthorName != "Noor" ||
		s.AuthorEmail != "noor@example.com" || !s.Verified || s.OrderID != "ord_1" {
		t.Fatalf("submitted %+v", s)
	}
	if p, ok := evs[1].(*domain.ReviewPublished); !ok || p.Rule == "" {
		t.Fatalf("not auto-published: %+v", evs[1])
	}
	for name, d := range map[string]domain.ReviewDraft{
		"unverified":    draft(func(d *domain.ReviewDraft) { d.VerifyingOrderID = "" }),
		"three stars":   draft(func(d *domain.ReviewDraft) { d.Rating = 3 }),
		"unverified 5*": draft(func(d *domain.ReviewDraft) { d.VerifyingOrderID, d.Rating = "", 5 }),
	} {
		if evs, err := domain.SubmitReview(&domain.Review{}, d, now); err != nil || len(evs) != 1 {
			t.Errorf("%s: %v %v, want pending", name, evs, err)
		}
	}
	for field, d := range map[string]domain.ReviewDraft{
		"rating":       draft(func(d *domain.ReviewDraft) { d.Rating = 0 }),
		"title":        draft(func(d *domain.ReviewDraft) { d.Title = strings.Repeat("é", domain.MaxReviewTitle+1) }),
		"body":         draft(func(d *domain.ReviewDraft) { d.Body = "<p></p> https://x.example.com" }),
		"author_name":  draft(func(d *domain.ReviewDraft) { d.AuthorName = "<i></i>" }),
		"author_email": draft(func(d *domain.ReviewDraft) { d.AuthorEmail = "Noor <noor@example.com>" }),
		"product_id":   draft(func(d *domain.ReviewDraft) { d.ProductID = "" }),
	} {
		_, err := domain.SubmitReview(&domain.Review{}, d, now)
		if e, ok := err.(*domain.Error); !ok || e.Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
	r := &domain.Review{}
	r.Apply(evs[0])
	if _, err := domain.SubmitReview(r, draft(nil), now); domain.ErrorCode(err) != domain.CodeConflict {
		t.Fatalf("second review: %v", err)
	}
	if ev, err := domain.RejectReview(r, "spam", now); err != nil || ev.(*domain.ReviewRejected).Reason != "spam" {
		t.Fatalf("reject: %v %v", ev, err)
	}
	if _, err := domain.RejectReview(r, " ", now); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Fatalf("reject without a reason: %v", err)
	}
	r.Apply(&domain.ReviewPublished{})
	if ev, err := domain.PublishReview(r, now); ev != nil || err != nil {
		t.Fatalf("publishing a published review: %v %v", ev, err)
	}
	if _, err := domain.PublishReview(&domain.Review{}, now); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Fatalf("publishing nothing: %v", err)
	}
}

func TestReviewRefs(t *testing.T) {
	for in, want := range map[string]string{
		"prd_abc123":    "prd_abc123",
		"8123456789012": domain.ProductIDFromExternal("shop_1", "8123456789012"),
		"prd_":          "",
		"prd_a b":       "",
		"shirt":         "",
		"":              "",
		"-1":            "",
	} {
		if got := domain.ReviewProductID("shop_1", in); got != want {
			t.Errorf("ReviewProductID(%q) = %q, want %q", in, got, want)
		}
	}
	if got := domain.ReviewOrderID("shop_1", "93010001"); got != domain.OrderIDFromExternal("shop_1", "93010001") {
		t.Errorf("ReviewOrderID = %q", got)
	}
}

// FuzzStripReviewText: what a storefront sends comes out valid UTF-8,
// without markup brackets, "://" links or control characters, trimmed, and
// stripping again changes nothing.
func FuzzStripReviewText(f *testing.F) {
	for _, s := range []string{"<b>bold</b> text", "see https://spam.example.net/x", "www.example.org rocks", "a < b > c",
		"line\r\nbreak\x00", "\xff\xfe", "visit spam.com/buy now", "I rate it <3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := domain.StripReviewText(s)
		if !utf8.ValidString(got) || strings.ContainsAny(got, "<>\r\x00") || strings.Contains(got, "://") ||
			got != strings.TrimSpace(got) {
			t.Fatalf("StripReviewText(%q) = %q", s, got)
		}
		if again := domain.StripReviewText(got); again != got {
			t.Fatalf("not idempotent: %q → %q → %q", s, got, again)
		}
	})
}

// FuzzReviewEmail: an accepted address is lowercased, trimmed, bare and
// within the limit.
func FuzzReviewEmail(f *testing.F) {
	for _, s := range []string{"noor@example.com", " A@B.co ", "Noor <n@example.com>", "", "a@b", strings.Repeat("a", 300) + "@x.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := domain.ReviewEmail(s)
		if err != nil {
			if domain.ErrorCode(err) != domain.CodeInvalid {
				t.Fatalf("non-validation error %v", err)
			}
			return
		}
		if got != strings.ToLower(got) || got != strings.TrimSpace(got) || len(got) > domain.MaxReviewEmail || !strings.Contains(got, "@") {
			t.Fatalf("accepted %q as %q", s, got)
		}
	})
}

// FuzzReviewProductID: a storefront's product or order reference maps to
// an id of its kind or to nothing.
func FuzzReviewProductID(f *testing.F) {
	for _, s := range []string{"prd_abc", "8123456789012", "", "prd_", "gid://shopify/Product/1", "12345678901234567890123"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for prefix, got := range map[string]string{domain.PrefixProduct: domain.ReviewProductID("shop_1", s),
			domain.PrefixOrder: domain.ReviewOrderID("shop_1", s)} {
			if got != "" && (!strings.HasPrefix(got, prefix) || len(got) > 64 || strings.ContainsAny(got, " \x00/")) {
				t.Fatalf("%q → %q", s, got)
			}
		}
	})
}

func TestMarkReviewHelpful(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	voter := strings.Repeat("ab", 16)
	published := &domain.Review{ID: "rev_1", ShopID: "shop_1", Status: domain.ReviewStatusPublished}
	ev, err := domain.MarkReviewHelpful(published, "shop_1", voter, now)
	if err != nil || ev.ReviewID != "rev_1" || ev.ShopID != "shop_1" || ev.Voter != voter || !ev.MarkedAt.Equal(now) {
		t.Fatalf("a vote on a published review: %+v %v", ev, err)
	}
	for name, c := range map[string]struct {
		r    *domain.Review
		shop string
	}{
		"unknown":        {&domain.Review{}, "shop_1"},
		"pending":        {&domain.Review{ID: "rev_1", ShopID: "shop_1", Status: domain.ReviewStatusPending}, "shop_1"},
		"rejected":       {&domain.Review{ID: "rev_1", ShopID: "shop_1", Status: domain.ReviewStatusRejected}, "shop_1"},
		"another shop's": {published, "shop_2"},
	} {
		if _, err := domain.MarkReviewHelpful(c.r, c.shop, voter, now); domain.ErrorCode(err) != domain.CodeNotFound {
			t.Errorf("%s review: %v", name, err)
		}
	}
	if _, err := domain.MarkReviewHelpful(published, "shop_1", "short", now); domain.ErrorCode(err) != domain.CodeInvalid {
		t.Errorf("a short voter: %v", err)
	}
	if a, b := domain.ReviewVoteStream("shop_1", "rev_1", voter), domain.ReviewVoteStream("shop_1", "rev_2", voter); a == b ||
		a != domain.ReviewVoteStream("shop_1", "rev_1", voter) || !strings.HasPrefix(a, "reviewvote-rvv_") {
		t.Errorf("vote streams %s %s", a, b)
	}
}
