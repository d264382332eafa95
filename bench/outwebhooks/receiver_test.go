package main

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/outbound"
)

// The receiver accepts what the server signs (outbound.SignAll, one
// secret or a rotation's two) and counts a repeat as a duplicate; it
// rejects a body signed under another secret.
func TestReceiverVerifiesTheServersSignatures(t *testing.T) {
	rc, err := newReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.close()
	rc.subscribe("/s/0", "whsec_current")
	body := []byte(`{"id":"evt_1","type":"customer.created","created_at":"2026-11-27T10:00:00.123456Z","shop_id":"shop_1","data":{}}`)
	post := func(sig string) int {
		req, _ := http.NewRequest(http.MethodPost, rc.base+"/s/0", bytes.NewReader(body))
		req.Header.Set("X-Service-Signature", sig)
		req.Header.Set("X-Service-Event-Id", "evt_1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := post(outbound.SignAll([][]byte{[]byte("whsec_other")}, body)); st != http.StatusUnauthorized {
		t.Fatalf("another secret's signature: %d", st)
	}
	if st := post(outbound.SignAll([][]byte{[]byte("whsec_current")}, body)); st != http.StatusOK {
		t.Fatalf("the server's signature: %d", st)
	}
	if st := post(outbound.SignAll([][]byte{[]byte("whsec_new"), []byte("whsec_current")}, body)); st != http.StatusOK {
		t.Fatalf("a rotation's signatures: %d", st)
	}
	if st := post(hexOnly(outbound.Sign([]byte("whsec_current"), body))); st != http.StatusUnauthorized {
		t.Fatalf("a signature without its sha256= prefix: %d", st)
	}
	got := rc.tally("/s/")
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if got.distinct != 1 || got.duplicates != 1 || rc.badSig != 2 {
		t.Fatalf("distinct %d, duplicates %d, bad signatures %d", got.distinct, got.duplicates, rc.badSig)
	}
	if len(rc.lags) != 1 || rc.lags[0] <= 0 || rc.lags[0] > 100*365*24*time.Hour {
		t.Fatalf("lags %v", rc.lags)
	}
}

func hexOnly(sig string) string { return sig[len(outbound.SignaturePrefix):] }
