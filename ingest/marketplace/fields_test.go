package marketplace

import (
	"net/http"
	"strings"
	"testing"
)

func TestTopLevelReadsUpToTheDamage(t *testing.T) {
	cases := []struct {
		body string
		want map[string]string
	}{
		{`{"shop_id":42,"type":1}`, map[string]string{"shop_id": "42", "type": "1"}},
		{`{"data":{"shop_id":"inner"},"shop_id":"outer"}`, map[string]string{"shop_id": "outer"}},
		{`{"shop_id":"a","shop_id":"b"}`, map[string]string{"shop_id": "b"}},
		{`{"shop_id":"a","shop_id":{"x":1}}`, map[string]string{}},
		{`{"shop_id":"7494","type":1,"data":{"order_id": not json`, map[string]string{"shop_id": "7494", "type": "1"}},
		{`{"type":1,"data":[1,2,{"a":[]}],"shop_id":"x"`, map[string]string{"type": "1", "shop_id": "x"}},
		{`{"shop_id":true,"type":null}`, map[string]string{}},
		{`["shop_id","x"]`, map[string]string{}},
		{``, map[string]string{}},
		{`{"shop_id" "x"}`, map[string]string{}},
	}
	for _, c := range cases {
		got := topLevel([]byte(c.body), "shop_id", "type")
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.body, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", c.body, k, got[k], v)
			}
		}
	}
}

func TestDeliveryID(t *testing.T) {
	tiktok, _ := Lookup("tiktok_shop")
	id, err := tiktok.deliveryID(http.Header{}, []byte(`{"tts_notification_id":"n-1"}`))
	if err != nil || id != "n-1" {
		t.Fatalf("tts_notification_id: %q %v", id, err)
	}
	a, _ := tiktok.deliveryID(http.Header{}, []byte(`{"type":1`))
	b, _ := tiktok.deliveryID(http.Header{}, []byte(`{"type":1`))
	c, _ := tiktok.deliveryID(http.Header{}, []byte(`{"type":2`))
	if !strings.HasPrefix(a, "sha256:") || a != b || a == c {
		t.Fatalf("fallback ids %q %q %q", a, b, c)
	}
	generic, _ := Lookup("generic")
	if _, err := generic.deliveryID(http.Header{}, nil); err == nil {
		t.Fatal("generic delivery without X-Marketplace-Delivery-Id accepted")
	}
	if _, err := generic.deliveryID(http.Header{"X-Marketplace-Delivery-Id": {strings.Repeat("x", 201)}}, nil); err == nil {
		t.Fatal("a 201-character delivery id accepted")
	}
}
