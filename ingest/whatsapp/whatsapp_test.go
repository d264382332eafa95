package whatsapp_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/whatsapp"
)

const waba = "102290129340398"

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// only parses a fixture with one entry and one change.
func only(t *testing.T, name string) (whatsapp.Entry, whatsapp.Change) {
	t.Helper()
	n, err := whatsapp.Parse(fixture(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if n.Object != "whatsapp_business_account" || len(n.Entries) != 1 || n.Entries[0].ID != waba || len(n.Entries[0].Changes) != 1 {
		t.Fatalf("%s: %+v", name, n)
	}
	return n.Entries[0], n.Entries[0].Changes[0]
}

func TestParseInboundMessages(t *testing.T) {
	e, c := only(t, "messages_text")
	if c.Field != whatsapp.FieldMessages || !e.Time.IsZero() {
		t.Fatalf("field %q time %v", c.Field, e.Time)
	}
	m, err := whatsapp.ParseMessages(e.ID, c.Value)
	if err != nil {
		t.Fatal(err)
	}
	want := domain.InboundMessage{BusinessAccountID: waba, PhoneNumberID: "106540352242922",
		MessageID: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=", From: "16505551234",
		ProfileName: "Sheena Nelson", Type: "text", Text: "Does it come in another color?", SentAt: time.Unix(1749416383, 0).UTC()}
	if len(m.Messages) != 1 || len(m.Statuses) != 0 || !reflect.DeepEqual(m.Messages[0], want) || m.DisplayPhoneNumber != "15550783881" {
		t.Fatalf("messages = %+v", m)
	}

	e, c = only(t, "messages_interactive")
	m, err = whatsapp.ParseMessages(e.ID, c.Value)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Messages) != 2 || m.Messages[0].Text != "Track my order" || m.Messages[0].Type != "interactive" ||
		m.Messages[1].Text != "This arrived broken" || m.Messages[1].ProfileName != "Kerry Fisher" {
		t.Fatalf("interactive/image = %+v", m.Messages)
	}
}

func TestParseStatuses(t *testing.T) {
	cases := []struct {
		fixture, status, code, title string
		at                           int64
	}{
		{"statuses_delivered", "delivered", "", "", 1750263773},
		{"statuses_read", "read", "", "", 1750263890},
		{"statuses_failed", "failed", "131047", "Re-engagement message", 1750264001},
	}
	for _, c := range cases {
		e, ch := only(t, c.fixture)
		m, err := whatsapp.ParseMessages(e.ID, ch.Value)
		if err != nil {
			t.Fatalf("%s: %v", c.fixture, err)
		}
		if len(m.Statuses) != 1 || len(m.Messages) != 0 {
			t.Fatalf("%s: %+v", c.fixture, m)
		}
		s := m.Statuses[0]
		if s.Status != c.status || s.ErrorCode != c.code || s.ErrorTitle != c.title || !s.At.Equal(time.Unix(c.at, 0)) ||
			s.Source != whatsapp.Source || s.RecipientID == "" || !strings.HasPrefix(s.MessageID, "wamid.") {
			t.Errorf("%s: %+v", c.fixture, s)
		}
	}
	e, ch := only(t, "messages_errors")
	if m, err := whatsapp.ParseMessages(e.ID, ch.Value); err != nil || len(m.Messages)+len(m.Statuses) != 0 {
		t.Fatalf("errors-only value: %+v %v", m, err)
	}
}

func TestParseTemplateStatus(t *testing.T) {
	cases := []struct{ fixture, event, id, reason, state string }{
		{"template_approved", "APPROVED", "1689556908129832", "NONE", domain.TemplateApproved},
		{"template_rejected", "REJECTED", "1689556908129833", "INVALID_FORMAT", domain.TemplateRejected},
		{"template_paused", "PAUSED", "1689556908129832", "", domain.TemplatePaused},
	}
	for _, c := range cases {
		e, ch := only(t, c.fixture)
		ts, err := whatsapp.ParseTemplateStatus(e.ID, e.Time, ch.Value)
		if err != nil {
			t.Fatalf("%s: %v", c.fixture, err)
		}
		if ts.Event != c.event || ts.TemplateID != c.id || ts.Reason != c.reason || ts.Language != "en_US" || ts.At.IsZero() ||
			domain.TemplateState(ts.Event) != c.state {
			t.Errorf("%s: %+v", c.fixture, ts)
		}
	}
}

func TestParseQualityAlertsAndReviews(t *testing.T) {
	for fx, want := range map[string]struct{ event, limit, stated, rating string }{
		"quality_flagged":    {"FLAGGED", "TIER_1K", "", domain.QualityRed},
		"quality_rated":      {"DOWNGRADE", "TIER_1K", "YELLOW", domain.QualityYellow},
		"quality_throughput": {"THROUGHPUT_UPGRADE", "TIER_UNLIMITED", "", ""},
	} {
		e, ch := only(t, fx)
		q, err := whatsapp.ParseQualityUpdate(e.ID, e.Time, ch.Value)
		if err != nil {
			t.Fatalf("%s: %v", fx, err)
		}
		if q.DisplayPhoneNumber != "15550783881" || q.Event != want.event || q.CurrentLimit != want.limit || q.Rating != want.stated ||
			domain.QualityRating(q.Rating, q.Event) != want.rating {
			t.Errorf("%s: %+v", fx, q)
		}
	}
	e, ch := only(t, "account_alerts")
	a, err := whatsapp.ParseAccountAlert(e.ID, e.Time, ch.Value)
	if err != nil {
		t.Fatal(err)
	}
	if a.EntityType != "BUSINESS" || a.EntityID != "506914307656634" || a.Severity != "WARNING" || a.Status != "ACTIVE" ||
		a.Type != "INCREASED_CAPABILITIES_ELIGIBILITY_DEFERRED" || a.Description == "" || !a.At.Equal(time.Unix(1739321024, 0)) {
		t.Fatalf("alert = %+v", a)
	}
	e, ch = only(t, "account_review_update")
	if d, err := whatsapp.ParseAccountReview(ch.Value); err != nil || d != "APPROVED" {
		t.Fatalf("review = %q, %v", d, err)
	}
	if _, ch = only(t, "unknown_field"); ch.Field != "business_capability_update" {
		t.Fatalf("unknown field = %q", ch.Field)
	}
}

func TestParseRejectsMalformedBodies(t *testing.T) {
	for name, body := range map[string]string{
		"not json":      `{"entry": [`,
		"trailing":      `{"entry":[{"id":"1","changes":[]}]} {}`,
		"no entry":      `{"object":"whatsapp_business_account","entry":[]}`,
		"entry id word": `{"entry":[{"id":"waba","changes":[]}]}`,
		"no field":      `{"entry":[{"id":"1","changes":[{"value":{}}]}]}`,
		"bad time":      `{"entry":[{"id":"1","time":"yesterday","changes":[]}]}`,
		"changes type":  `{"entry":[{"id":"1","changes":"oops"}]}`,
	} {
		_, err := whatsapp.Parse([]byte(body))
		if domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("%s: err = %v, want a validation error", name, err)
		}
	}
	for name, value := range map[string]string{
		"from number":    `{"messages":[{"from":16505551234,"id":"wamid.x","timestamp":"1","type":"text"}]}`,
		"timestamp text": `{"statuses":[{"id":"wamid.x","status":"read","timestamp":"soon"}]}`,
		"negative time":  `{"statuses":[{"id":"wamid.x","status":"read","timestamp":"-5"}]}`,
		"value array":    `[]`,
	} {
		if _, err := whatsapp.ParseMessages(waba, []byte(value)); domain.ErrorCode(err) != domain.CodeInvalid {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestAccountIDs(t *testing.T) {
	cases := []struct {
		body string
		want []string
	}{
		{string(fixture(t, "messages_text")), []string{waba}},
		{`{"entry":[{"id":"1"},{"id":2},{"id":"1"}]}`, []string{"1", "2"}},
		// Keys match without regard to case, and every occurrence counts,
		// so a later duplicate key cannot smuggle in an unverified id.
		{`{"Entry":[{"id":"1","ID":"2"}],"entry":[{"iD":"3"}]}`, []string{"1", "2", "3"}},
		// Read as far as the body is well-formed.
		{`{"object":"x","entry":[{"changes":[{"value":{"id":"9"}}],"id":"4","changes":[{"field":"messa`, []string{"4"}},
		{`{"entry":{"id":"5"}}`, nil},
		{`["entry"]`, nil},
		{`{"entry":[{"id":{"nested":"6"}}]}`, nil},
		{``, nil},
	}
	for _, c := range cases {
		if got := whatsapp.AccountIDs([]byte(c.body)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("AccountIDs(%.60q) = %q, want %q", c.body, got, c.want)
		}
	}
}

func TestSignature(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	body := fixture(t, "messages_text")
	sig := whatsapp.Sign(secret, body)
	if !strings.HasPrefix(sig, "sha256=") || len(sig) != len("sha256=")+64 {
		t.Fatalf("signature %q", sig)
	}
	if !whatsapp.Verify(secret, body, sig) {
		t.Fatal("own signature does not verify")
	}
	if !whatsapp.Verify(secret, body, "sha256="+strings.ToUpper(sig[7:])) {
		t.Error("upper-case hex refused")
	}
	altered := append([]byte(nil), body...)
	altered[len(altered)-2] = ' '
	for name, c := range map[string]struct {
		secret, body []byte
		sig          string
	}{
		"other secret":  {[]byte("another-secret-0123456789"), body, sig},
		"altered body":  {secret, altered, sig},
		"no prefix":     {secret, body, sig[7:]},
		"sha1 prefix":   {secret, body, "sha1=" + sig[7:]},
		"short":         {secret, body, sig[:len(sig)-2]},
		"not hex":       {secret, body, "sha256=" + strings.Repeat("z", 64)},
		"empty":         {secret, body, ""},
		"space in sig ": {secret, body, "sha256= " + sig[8:]},
	} {
		if whatsapp.Verify(c.secret, c.body, c.sig) {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestSafeChallenge(t *testing.T) {
	for s, want := range map[string]bool{
		"1158201444":               true,
		"CHALLENGE_ACCEPTED-12.x~": true,
		"":                         false,
		"has space":                false,
		"<script>\n":               false,
		"é":                        false,
		strings.Repeat("9", 256):   true,
		strings.Repeat("9", 257):   false,
	} {
		if got := whatsapp.SafeChallenge(s); got != want {
			t.Errorf("SafeChallenge(%.20q) = %v", s, got)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	body := fixture(b, "statuses_failed")
	sig := whatsapp.Sign(secret, body)
	b.ReportAllocs()
	for b.Loop() {
		if !whatsapp.Verify(secret, body, sig) {
			b.Fatal("does not verify")
		}
	}
}
