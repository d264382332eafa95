package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/ingest/whatsapp"
	"github.com/cgp-platform/cgp/internal/whatsapptest"
	"github.com/cgp-platform/cgp/openapi/openapitest"
)

// TestCampaignSurvivesSIGKILLSendingNoOneTwiceAndNoOneNever kills the
// binary with SIGKILL while a 1,000-recipient WhatsApp campaign is being
// sent, restarts it, and finds that every recipient got exactly one
// message. The WhatsApp Cloud API's contract server reports each message
// it accepted with a signed "sent" status webhook carrying the message id
// back (biz_opaque_callback_data), retried until the service answers, as
// the platform does: that is how the restarted service learns which of
// the sends in flight at the kill reached the API.
func TestCampaignSurvivesSIGKILLSendingNoOneTwiceAndNoOneNever(t *testing.T) {
	const total = 1000
	dir := t.TempDir()
	api := whatsapptest.New(whatsapptest.Options{})
	defer api.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	var base atomic.Value // the running binary's address
	const waba, appSecret = "7301", "app-secret-7301-0123456789"
	client := &http.Client{Timeout: 10 * time.Second}
	var statuses sync.WaitGroup
	defer statuses.Wait()
	defer stop()
	api.OnAccepted(func(m whatsapptest.Sent) {
		statuses.Add(1)
		go func() {
			defer statuses.Done()
			body := waStatus(waba, m.WAMID, "sent", m.CallbackData, time.Now().Unix())
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base.Load().(string)+whatsapp.Path, strings.NewReader(string(body)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(whatsapp.HeaderSignature, whatsapp.Sign([]byte(appSecret), body))
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						return
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
	})
	env := []string{"CGP_OUTBOUND_ALLOW_PRIVATE=true", "CGP_WHATSAPP_API_URL=" + api.URL, "CGP_MESSAGE_RECONCILE_WINDOW=10s", "CGP_RATE_LIMIT_AGENCY=1000000"}
	p := startBinary(t, dir, env...)
	base.Store(p.base)
	s := &testServer{t: t, base: p.base}
	tn := binaryTenant(t, dir, "kill-campaign.example.com")
	binaryCLI(t, dir, "messaging", "connect", "--shop", tn.shopID, "--business-account-id", waba, "--phone-number-id", "106540352242922",
		"--app-secret", appSecret, "--verify-token", "verify-"+waba, "--access-token", "EAAG-kill-token-0123456789")
	waitForToken(t, s, tn)
	v := openapitest.NewValidator(t)
	c := catalogClient{t: t, s: s, v: v, token: tn.token}
	eventually(t, 30*time.Second, "the account is connected", func() bool {
		r := waPost(t, s, nil, appSecret, waFixture(t, "template_approved", waba))
		return r.status == http.StatusOK
	})

	// 1,000 customers who opted in to WhatsApp.
	parallel(t, total, func(i int) error {
		r := s.webhook(t, tn, "customers/create", fmt.Sprintf("kill-c-%d", i),
			stateCustomer(int64(20000+i), fmt.Sprintf("k%d@example.com", i), "not_subscribed", "not_subscribed"))
		if r.status != http.StatusOK {
			return fmt.Errorf("customers/create: %d %s", r.status, r.body)
		}
		return nil
	})
	// A write after every customer: its position is past all of theirs.
	ar := c.ok(201, http.MethodPost, "/api/v1/audiences", `{"data":{"attributes":{"name":"All"}}}`)
	aud := data(ar, t)["id"].(string)
	ids := customerIDs(c, ar.position(t))
	if len(ids) != total {
		t.Fatalf("%d customers", len(ids))
	}
	var list []string
	for _, id := range ids {
		list = append(list, id)
	}
	parallel(t, total, func(i int) error {
		r := c.call(http.MethodPost, "/api/v1/customers/"+list[i]+"/consents", `{"data":{"attributes":{"channel":"whatsapp","state":"subscribed"}}}`)
		if r.status != http.StatusCreated {
			return fmt.Errorf("consent: %d %s", r.status, r.body)
		}
		return nil
	})
	cr := c.ok(201, http.MethodPost, "/api/v1/campaigns", campaignBody("Kill", aud, "whatsapp", approvedTemplate))
	id := data(cr, t)["id"].(string)
	r := c.ok(200, http.MethodPost, "/api/v1/campaigns/"+id+"/launch", "", "X-Wait-For-Position", cr.position(t))
	if attrs(data(r, t))["recipients"] != float64(total) && attrs(data(r, t))["status"] != "sending" {
		t.Fatalf("launch: %s", r.body)
	}

	// Kill it mid-campaign.
	if err := api.WaitCount(ctxWithin(t, 60*time.Second), total/5); err != nil {
		t.Fatal(err)
	}
	p.kill(syscall.SIGKILL)
	atKill := api.Count()

	p2 := startBinary(t, dir, env...)
	base.Store(p2.base)
	s2 := &testServer{t: t, base: p2.base}
	c2 := catalogClient{t: t, s: s2, v: v, token: tn.token}
	a := waitCampaign(c2, id, "the campaign completes after the restart", completedAndCounted)
	got := map[string]int{}
	for _, m := range api.Sent() {
		got[m.To]++
	}
	for to, n := range got {
		if n != 1 {
			t.Errorf("%s got %d messages", to, n)
		}
	}
	if len(got) != total || stats(a)["sent"] != float64(total) || a["recipients"] != float64(total) {
		t.Fatalf("%d recipients served, campaign %v", len(got), a)
	}
	t.Logf("%d accepted before SIGKILL; %d requests in all", atKill, api.Count())
}

// parallel runs f(0…n-1) on 8 goroutines and fails on the first error.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var next atomic.Int64
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// ctxWithin is a context ending after d or with the test.
func ctxWithin(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
