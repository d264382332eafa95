package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Two servers over one PostgreSQL log: the deliveries' attempt log is the
// same on both (each folds the attempts the holder records in the log), a
// test delivery asked on the server that does not deliver is made by the
// one that does and answered with its attempt, a retry asked there is
// delivered by the holder, and when the holder stops the other takes the
// deliveries over and delivers only the new events: the receiver gets no
// event twice but the one retried.
func TestOutboundWebhooksTakenOverByAnotherServer(t *testing.T) {
	st := newSharedStores(t)
	s1, dir1 := st.server(t, fastWebhooks)
	s2, _ := st.server(t, fastWebhooks)
	tn := newTenant(t, dir1, "wh-takeover-"+strings.ToLower(randomSuffix(t))+".example.com", "enterprise", "webhooks:read,webhooks:write")
	rc := newReceiver(t, nil)
	waitForToken(t, s1, tn)
	waitForToken(t, s2, tn)
	created := do(t, http.MethodPost, s2.base+"/api/v1/webhook-subscriptions",
		[]byte(subscriptionBody(rc.srv.URL+"/hooks", []string{"customer.created"}, "")),
		map[string]string{"Authorization": "Bearer " + tn.token, "Content-Type": "application/json"})
	if created.status != http.StatusCreated {
		t.Fatalf("subscribe: %d %s", created.status, created.body)
	}
	sub := data(created, t)["id"].(string)
	var holder, other *testServer
	eventually(t, time.Minute, "one server holding webhook_delivery", func() bool {
		h1, h2 := leaseHeld(t, s1.base, "webhook_delivery"), leaseHeld(t, s2.base, "webhook_delivery")
		switch {
		case h1 && !h2:
			holder, other = s1, s2
		case h2 && !h1:
			holder, other = s2, s1
		}
		return holder != nil
	})

	// Events posted to the server that does not deliver are delivered once
	// each by the holder; both servers list the same deliveries.
	postCustomers(t, other, tn, 1, 4)
	// The receiver's count gates the reads, which the rate limit counts.
	eventually(t, time.Minute, "four deliveries succeeded on both servers", func() bool {
		return rc.distinct() >= 4 && len(deliveries(t, holder, nil, tn.token, sub, "&filter[state]=succeeded")) == 4 &&
			len(deliveries(t, other, nil, tn.token, sub, "&filter[state]=succeeded")) == 4
	})
	onHolder, _ := json.Marshal(deliveries(t, holder, nil, tn.token, sub, ""))
	onOther, _ := json.Marshal(deliveries(t, other, nil, tn.token, sub, ""))
	if string(onHolder) != string(onOther) {
		t.Fatalf("the deliveries differ:\non the holder %s\non the other  %s", onHolder, onOther)
	}
	if !strings.Contains(string(onOther), `"response_body":"{\"ok\":true}"`) {
		t.Errorf("the other server's attempt log lacks the receiver's answer: %s", onOther)
	}

	// A test asked on the other server: the holder sends it, the other
	// answers with the attempt made.
	r := do(t, http.MethodPost, other.base+"/api/v1/webhook-subscriptions/"+sub+"/test", nil,
		map[string]string{"Authorization": "Bearer " + tn.token})
	if r.status != http.StatusOK || attrs(data(r, t))["state"] != "succeeded" {
		t.Fatalf("test on the server that does not deliver: %d %s", r.status, r.body)
	}

	// A retry asked on the other server: recorded in the log, the holder
	// folds it and delivers the event again (the one event the receiver
	// gets twice, as asked); both servers then show its second attempt.
	first := deliveries(t, other, nil, tn.token, sub, "&sort=created_at")[0]
	retried := attrs(first)["event_id"].(string)
	r = do(t, http.MethodPost, other.base+"/api/v1/webhook-subscriptions/"+sub+"/deliveries/"+first["id"].(string)+"/retry", nil,
		map[string]string{"Authorization": "Bearer " + tn.token})
	if r.status != http.StatusAccepted {
		t.Fatalf("retry on the server that does not deliver: %d %s", r.status, r.body)
	}
	attempted := func(s *testServer) bool {
		for _, d := range deliveries(t, s, nil, tn.token, sub, "&filter[state]=succeeded") {
			if d["id"] == first["id"] {
				return attrs(d)["attempt_count"] == 2.0
			}
		}
		return false
	}
	eventually(t, time.Minute, "the retry delivered and shown on both servers", func() bool {
		return len(rc.requests()) >= 6 && attempted(holder) && attempted(other)
	})

	// The holder stops; the other takes the deliveries over and delivers
	// the new events only.
	holder.stop()
	eventually(t, time.Minute, "the other server holding webhook_delivery", func() bool {
		return leaseHeld(t, other.base, "webhook_delivery")
	})
	postCustomers(t, other, tn, 5, 3)
	eventually(t, time.Minute, "the seven events and the test delivered", func() bool {
		return rc.distinct() >= 8 && len(deliveries(t, other, nil, tn.token, sub, "&filter[state]=succeeded")) == 8
	})
	seen := map[string]int{}
	for _, g := range rc.requests() {
		seen[g.id]++
	}
	for id, n := range seen {
		want := 1
		if id == retried {
			want = 2
		}
		if n != want {
			t.Errorf("event %s received %d times, want %d", id, n, want)
		}
	}
	if len(seen) != 8 { // seven events and the test
		t.Errorf("%d events received, want 8: %v", len(seen), seen)
	}
}

// A server taking the deliveries over from another (here: the same data
// directory restarted without webhooks.db, as a server that never ran the
// fan-out) folds the attempts recorded in the log before it delivers: the
// attempt log is back as it was, failures and retry times included, and
// only the new event is delivered.
func TestOutboundWebhooksRestartedWithoutTheirStoreSendNothingAgain(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, fastWebhooks)
	var answered atomic.Int64
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if answered.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // one failed attempt on record
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	tn := newTenant(t, dir, "wh-restart-store.example.com", "agency", "webhooks:read,webhooks:write")
	sub, _ := subscribe(t, dir, tn, rc.srv.URL+"/hooks", "customer.created")
	waitForToken(t, s, tn)
	postCustomers(t, s, tn, 1, 3)
	eventually(t, minEventually, "three deliveries succeeded", func() bool {
		return rc.distinct() >= 3 && len(deliveries(t, s, nil, tn.token, sub, "&filter[state]=succeeded")) == 3
	})
	before, _ := json.Marshal(deliveries(t, s, nil, tn.token, sub, ""))
	s.stop()
	for _, f := range []string{"webhooks.db", "webhooks.db-wal", "webhooks.db-shm"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}

	s = startServerWith(t, dir, fastWebhooks)
	postCustomers(t, s, tn, 4, 1)
	eventually(t, minEventually, "the new event delivered", func() bool {
		return rc.distinct() >= 4 && len(deliveries(t, s, nil, tn.token, sub, "&filter[state]=succeeded")) == 4
	})
	if got := len(rc.requests()); got != 5 { // four events, one of them attempted twice
		t.Errorf("%d requests, want 5: an event was delivered again after the restart", got)
	}
	list := deliveries(t, s, nil, tn.token, sub, "") // the latest first
	if after, _ := json.Marshal(list[1:]); string(after) != string(before) {
		t.Errorf("the attempt log after the restart:\n%s\nwant\n%s", after, before)
	}
}
