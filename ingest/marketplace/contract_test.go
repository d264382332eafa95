package marketplace_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/ingest/marketplace"
)

func contract(t testing.TB, name string) *marketplace.Contract {
	t.Helper()
	c, ok := marketplace.Lookup(name)
	if !ok {
		t.Fatalf("no contract %s", name)
	}
	return c
}

func header(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

func TestEveryMarketplaceHasAContract(t *testing.T) {
	var names []string
	for _, c := range marketplace.Contracts() {
		names = append(names, c.Name)
		if c.Signature == "" || c.Signed == 0 || c.Encoding == 0 || c.Secret == 0 || c.Describe() == "" {
			t.Errorf("%s: incomplete contract %+v", c.Name, c)
		}
	}
	if !slices.Equal(names, domain.Marketplaces()) {
		t.Fatalf("contracts %v, marketplaces %v", names, domain.Marketplaces())
	}
	if _, ok := marketplace.Lookup("amazon"); ok {
		t.Fatal("a contract for an unknown marketplace")
	}
}

// The test vector of the Standard Webhooks specification.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = "1614265330"
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var vectorTime = time.Unix(1614265330, 0)

func vectorHeaders() map[string]string {
	return map[string]string{"webhook-id": vectorID, "webhook-timestamp": vectorTimestamp, "webhook-signature": vectorSignature}
}

func TestEtsyFollowsStandardWebhooks(t *testing.T) {
	c := contract(t, "etsy")
	body := []byte(vectorBody)
	if err := c.Verify(header(vectorHeaders()), body, vectorSecret, "", vectorTime); err != nil {
		t.Fatalf("test vector: %v", err)
	}
	signed, err := c.Sign(vectorSecret, "", "", vectorID, vectorTime, body)
	if err != nil || signed["webhook-signature"] != vectorSignature || signed["webhook-timestamp"] != vectorTimestamp || signed["webhook-id"] != vectorID {
		t.Fatalf("Sign = %v, %v", signed, err)
	}
	// The secret without its whsec_ prefix is the same key.
	if err := c.Verify(header(vectorHeaders()), body, strings.TrimPrefix(vectorSecret, "whsec_"), "", vectorTime); err != nil {
		t.Fatalf("secret without prefix: %v", err)
	}
	// One matching v1 entry among others (rotation, asymmetric v1a) is enough.
	h := vectorHeaders()
	h["webhook-signature"] = "v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg== v1,Zm9vYmFyYmF6Zm9vYmFyYmF6Zm9vYmFyYmF6Zm9vYmE= " + vectorSignature
	if err := c.Verify(header(h), body, vectorSecret, "", vectorTime); err != nil {
		t.Fatalf("list of signatures: %v", err)
	}
	within := vectorTime.Add(marketplace.StandardWebhooksTolerance)
	if err := c.Verify(header(vectorHeaders()), body, vectorSecret, "", within); err != nil {
		t.Fatalf("at the edge of the window: %v", err)
	}

	fails := map[string]struct {
		mod  func(h map[string]string)
		body string
		now  time.Time
		want error
	}{
		"stale":                  {now: within.Add(time.Second), want: marketplace.ErrTimestamp},
		"from the future":        {now: vectorTime.Add(-marketplace.StandardWebhooksTolerance - time.Second), want: marketplace.ErrTimestamp},
		"timestamp not a number": {mod: func(h map[string]string) { h["webhook-timestamp"] = "1614265330.5" }, want: marketplace.ErrTimestamp},
		"other timestamp":        {mod: func(h map[string]string) { h["webhook-timestamp"] = "1614265331" }, want: marketplace.ErrMismatch},
		"other id":               {mod: func(h map[string]string) { h["webhook-id"] = "msg_other" }, want: marketplace.ErrMismatch},
		"altered body":           {body: `{"test": 2432232315}`, want: marketplace.ErrMismatch},
		"only v1a": {mod: func(h map[string]string) {
			h["webhook-signature"] = "v1a," + strings.TrimPrefix(vectorSignature, "v1,")
		}, want: marketplace.ErrMismatch},
		"not base64": {mod: func(h map[string]string) { h["webhook-signature"] = "v1,%%%" }, want: marketplace.ErrMismatch},
		"no version": {mod: func(h map[string]string) { h["webhook-signature"] = strings.TrimPrefix(vectorSignature, "v1,") }, want: marketplace.ErrMismatch},
	}
	for name, f := range fails {
		h := vectorHeaders()
		if f.mod != nil {
			f.mod(h)
		}
		b, now := body, vectorTime
		if f.body != "" {
			b = []byte(f.body)
		}
		if !f.now.IsZero() {
			now = f.now
		}
		if err := c.Verify(header(h), b, vectorSecret, "", now); !errors.Is(err, f.want) {
			t.Errorf("%s: %v, want %v", name, err, f.want)
		}
	}
	if err := c.Verify(header(vectorHeaders()), body, "whsec_"+strings.Repeat("A", 32), "", vectorTime); !errors.Is(err, marketplace.ErrMismatch) {
		t.Errorf("other secret: %v", err)
	}
	for _, missing := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
		h := vectorHeaders()
		delete(h, missing)
		var me *marketplace.MissingError
		if err := c.Verify(header(h), body, vectorSecret, "", vectorTime); !errors.As(err, &me) || me.Header != missing {
			t.Errorf("without %s: %v", missing, err)
		}
	}
}

// tiktokSignature computes TikTok Shop's documented signature independently
// of the contract: hex HMAC-SHA256(app secret, app key + body).
func tiktokSignature(appSecret, appKey string, body []byte) string {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write([]byte(appKey))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func TestTikTokShopSignsAppKeyAndBody(t *testing.T) {
	c := contract(t, "tiktok_shop")
	const appKey, appSecret = "68xu9ks5p4i8", "e59af819cc-tiktok-secret"
	body := []byte(`{"type":1,"tts_notification_id":"1","shop_id":"7494","timestamp":1,"data":{}}`)
	sig := tiktokSignature(appSecret, appKey, body)
	h := http.Header{"Authorization": {sig}}
	if err := c.Verify(h, body, appSecret, appKey, time.Now()); err != nil {
		t.Fatalf("documented signature: %v", err)
	}
	if signed, _ := c.Sign(appSecret, appKey, "", "", time.Now(), body); signed["Authorization"] != sig {
		t.Fatalf("Sign = %v, want %s", signed, sig)
	}
	if err := c.Verify(http.Header{"Authorization": {strings.ToUpper(sig)}}, body, appSecret, appKey, time.Now()); err != nil {
		t.Fatalf("upper-case hex: %v", err)
	}
	// No timestamp: an old delivery verifies (repeats are caught by its id).
	if err := c.Verify(h, body, appSecret, appKey, time.Now().Add(90*24*time.Hour)); err != nil {
		t.Fatalf("no replay window expected: %v", err)
	}
	for name, f := range map[string]struct {
		sig, secret, appKey string
		body                []byte
	}{
		"other app key": {sig, appSecret, "other-key", body},
		"no app key":    {sig, appSecret, "", body},
		"other secret":  {sig, "another-secret-0123", appKey, body},
		"altered body":  {sig, appSecret, appKey, append([]byte(" "), body...)},
		"body only":     {hex.EncodeToString(hmacOf(appSecret, body)), appSecret, appKey, body},
		"bearer prefix": {"Bearer " + sig, appSecret, appKey, body},
		"truncated":     {sig[:62], appSecret, appKey, body},
	} {
		if err := c.Verify(http.Header{"Authorization": {f.sig}}, f.body, f.secret, f.appKey, time.Now()); !errors.Is(err, marketplace.ErrMismatch) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var me *marketplace.MissingError
	if err := c.Verify(http.Header{}, body, appSecret, appKey, time.Now()); !errors.As(err, &me) || me.Header != "Authorization" {
		t.Errorf("no signature: %v", err)
	}
}

func hmacOf(secret string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return m.Sum(nil)
}

func TestGenericSignsTheBody(t *testing.T) {
	c := contract(t, "generic")
	const secret = "generic-marketplace-secret"
	body := []byte(`{"type":"order.updated"}`)
	sig := "sha256=" + hex.EncodeToString(hmacOf(secret, body))
	h := http.Header{"X-Marketplace-Signature": {sig}}
	if err := c.Verify(h, body, secret, "", time.Now()); err != nil {
		t.Fatalf("signature: %v", err)
	}
	signed, _ := c.Sign(secret, "", "acct-1", "dlv-1", time.Now(), body)
	if signed["X-Marketplace-Signature"] != sig || signed["X-Marketplace-Account"] != "acct-1" || signed["X-Marketplace-Delivery-Id"] != "dlv-1" {
		t.Fatalf("Sign = %v", signed)
	}
	for name, s := range map[string]string{
		"no prefix":    strings.TrimPrefix(sig, "sha256="),
		"other prefix": "sha1=" + strings.TrimPrefix(sig, "sha256="),
		"other secret": "sha256=" + hex.EncodeToString(hmacOf("other", body)),
		"not hex":      "sha256=zz",
	} {
		if err := c.Verify(http.Header{"X-Marketplace-Signature": {s}}, body, secret, "", time.Now()); !errors.Is(err, marketplace.ErrMismatch) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var me *marketplace.MissingError
	if err := c.Verify(http.Header{"X-Marketplace-Signature": {"  "}}, body, secret, "", time.Now()); !errors.As(err, &me) {
		t.Errorf("blank signature: %v", err)
	}
}

func TestCheckCredentials(t *testing.T) {
	cases := []struct {
		marketplace, secret, appKey, field string
	}{
		{"etsy", vectorSecret, "", ""},
		{"etsy", "whsec_not base64!", "", "secret"},
		{"etsy", "whsec_c2hvcnQ=", "", "secret"}, // 5 bytes
		{"tiktok_shop", "e59af819cc-tiktok-secret", "68xu9ks5p4i8", ""},
		{"tiktok_shop", "e59af819cc-tiktok-secret", " ", "app_key"},
		{"generic", "any-secret-of-16-chars", "", ""},
	}
	for _, c := range cases {
		err := contract(t, c.marketplace).CheckCredentials(c.secret, c.appKey)
		var de *domain.Error
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s %q: %v", c.marketplace, c.secret, err)
		case c.field != "" && (!errors.As(err, &de) || de.Field != c.field):
			t.Errorf("%s %q: %v, want a failure on %s", c.marketplace, c.secret, err, c.field)
		case err != nil && strings.Contains(err.Error(), c.secret):
			t.Errorf("the error repeats the secret: %v", err)
		}
	}
}
