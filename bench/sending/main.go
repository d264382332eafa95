// Command sending measures how fast the service sends a campaign, over
// the real binary: on a fresh data directory it generates a shop of N
// customers (`cgp dev generate --whatsapp-opt-in`: about half accept
// marketing, with an e-mail address, a phone and a WhatsApp opt-in),
// starts the server with an SMTP relay (a real SMTP server of this
// process, emersion/go-smtp) and the WhatsApp Cloud API's send contract
// (an httptest server of this process), launches an e-mail campaign and
// then a WhatsApp campaign to everyone, and reports for each the messages
// per second from the launch's answer until the campaign is completed,
// the messages the receiver got (duplicates show as more than the
// recipients), and the server's CPU and memory while sending.
//
// In the same run, a bare loop of this process (K goroutines) sends
// through the same clients (channels/email, channels/whatsapp) to the
// same receivers: the baseline of the ratio.
//
//	go run ./bench/sending -bin bin/cgp -customers 200000 -runs 3
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cgp-platform/cgp/bench/internal/benchkit"
	"github.com/cgp-platform/cgp/channels/email"
	"github.com/cgp-platform/cgp/channels/whatsapp"
	whreceiver "github.com/cgp-platform/cgp/ingest/whatsapp"
	"github.com/cgp-platform/cgp/internal/smtptest"
	"github.com/cgp-platform/cgp/internal/whatsapptest"
)

const (
	waba, appSecret = "880011", "bench-app-secret-0123456789"
	accessToken     = "EAAG-bench-access-token-0123456789"
	phoneNumberID   = "106540352242922"
	// approvedTemplate is the template of the template_approved fixture.
	approvedTemplate = "1689556908129832"
	fixtureWABA      = "102290129340398"
)

// serveArgs are added to the server's command line; debugAddr is the
// server's debug listener ("" for none).
var (
	serveArgs []string
	debugAddr string
)

// profile writes a CPU profile of the server's next d to file.
func profile(file string, d time.Duration) {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", debugAddr, int(d.Seconds())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "sending: profile:", err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_ = os.WriteFile(file, b, 0o600)
}

// result is one campaign's sending.
type result struct {
	recipients, received int
	seconds, perSecond   float64
	cpuCores             float64
	rssStartMB, rssMaxMB float64
}

func main() {
	bin := flag.String("bin", "bin/cgp", "path of the cgp binary (make build)")
	customers := flag.Int("customers", 200000, "customers of the generated shop (about half consent)")
	runs := flag.Int("runs", 1, "runs; medians are reported")
	k := flag.Int("k", 64, "goroutines of the bare send loop")
	bare := flag.Duration("bare", 10*time.Second, "length of each bare loop")
	debug := flag.String("debug-addr", "", "pass --debug-addr to the server and write a CPU profile of each campaign's first seconds to sending-<channel>.prof")
	flag.Parse()
	if *debug != "" {
		serveArgs = append(serveArgs, "--debug-addr", *debug)
		debugAddr = *debug
	}

	relay, err := smtptest.Start(smtptest.Options{CountOnly: true})
	if err != nil {
		fail(err)
	}
	defer relay.Close()
	api := whatsapptest.New(whatsapptest.Options{CountOnly: true})
	defer api.Close()

	var mails, was []result
	var bareMail, bareWA []float64
	for i := 0; i < *runs; i++ {
		m, w, err := runOnce(*bin, *customers, relay, api)
		if err != nil {
			fail(err)
		}
		fmt.Printf("run %d: e-mail %s recipients in %.1f s = %s/s (received %s, cpu %.2f cores, rss %.0f → %.0f MB); whatsapp %s in %.1f s = %s/s (received %s, cpu %.2f cores, rss %.0f → %.0f MB)\n",
			i+1, benchkit.Thousands(float64(m.recipients)), m.seconds, benchkit.Thousands(m.perSecond), benchkit.Thousands(float64(m.received)),
			m.cpuCores, m.rssStartMB, m.rssMaxMB,
			benchkit.Thousands(float64(w.recipients)), w.seconds, benchkit.Thousands(w.perSecond), benchkit.Thousands(float64(w.received)),
			w.cpuCores, w.rssStartMB, w.rssMaxMB)
		mails, was = append(mails, m), append(was, w)
		bm, bw := bareLoops(relay, api, *k, *bare)
		fmt.Printf("run %d: bare loop (%d goroutines): e-mail %s/s, whatsapp %s/s\n", i+1, *k, benchkit.Thousands(bm), benchkit.Thousands(bw))
		bareMail, bareWA = append(bareMail, bm), append(bareWA, bw)
	}
	fmt.Printf("\nMedians of %d runs; %s customers generated; the bare loops have %d goroutines.\n\n", *runs,
		benchkit.Thousands(float64(*customers)), *k)
	fmt.Println("| campaign | recipients | received | launch → completed | messages/s | bare loop, messages/s | ratio | server CPU, cores | server RSS before → max while sending |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	row := func(name string, rs []result, bareRate float64) {
		med := func(f func(result) float64) float64 { return benchkit.MedianOf(rs, f) }
		rate := med(func(r result) float64 { return r.perSecond })
		fmt.Printf("| %s | %s | %s | %.1f s | %s | %s | %.2f | %.2f | %.0f → %.0f MB |\n", name,
			benchkit.Thousands(med(func(r result) float64 { return float64(r.recipients) })),
			benchkit.Thousands(med(func(r result) float64 { return float64(r.received) })),
			med(func(r result) float64 { return r.seconds }), benchkit.Thousands(rate), benchkit.Thousands(bareRate), rate/bareRate,
			med(func(r result) float64 { return r.cpuCores }), med(func(r result) float64 { return r.rssStartMB }),
			med(func(r result) float64 { return r.rssMaxMB }))
	}
	row("e-mail (SMTP)", mails, benchkit.Median(bareMail))
	row("WhatsApp (Cloud API contract)", was, benchkit.Median(bareWA))
}

// runOnce generates a shop, starts the server and sends an e-mail
// campaign, then a WhatsApp campaign, to every consenting customer.
func runOnce(bin string, customers int, relay *smtptest.Server, api *whatsapptest.Server) (result, result, error) {
	dir, err := os.MkdirTemp("", "cgp-bench-sending-")
	if err != nil {
		return result{}, result{}, err
	}
	defer os.RemoveAll(dir)
	tn, err := benchkit.NewTenant(bin, dir, "Bench", "bench-sending.example.com", "bench-secret-0123456789abcdef", "agency")
	if err != nil {
		return result{}, result{}, err
	}
	token, err := tn.Token(bin, dir, "*")
	if err != nil {
		return result{}, result{}, err
	}
	if _, err := benchkit.CLI(bin, dir, "dev", "generate", "--shop", tn.ShopID, "--customers", strconv.Itoa(customers), "--orders", "0",
		"--whatsapp-opt-in"); err != nil {
		return result{}, result{}, err
	}
	if _, err := benchkit.CLI(bin, dir, "messaging", "connect", "--shop", tn.ShopID, "--business-account-id", waba,
		"--phone-number-id", phoneNumberID, "--app-secret", appSecret, "--verify-token", "bench-verify-token", "--access-token", accessToken); err != nil {
		return result{}, result{}, err
	}
	srv, err := benchkit.Start(bin, dir, append([]string{"--outbound-allow-private", "--smtp-addr", relay.Addr, "--smtp-from",
		"news@bench.example.com", "--whatsapp-api-url", api.URL, "--rate-limit-agency", "1000000"}, serveArgs...)...)
	if err != nil {
		return result{}, result{}, err
	}
	defer srv.Stop()
	c := &client{http: benchkit.Client(8, 60*time.Second), base: srv.Base, token: token}
	if err := srv.WaitProjections(c.http, 0, 10*time.Minute); err != nil {
		return result{}, result{}, err
	}
	// The account is known once the messaging read model folded it.
	var tplErr error
	if err := benchkit.WaitFor(time.Minute, "the template webhook is accepted", func() bool {
		tplErr = c.approveTemplate()
		return tplErr == nil
	}); err != nil {
		return result{}, result{}, fmt.Errorf("%w: %v", err, tplErr)
	}
	aud, _, err := c.create("/api/v1/audiences", `{"data":{"attributes":{"name":"Everyone"}}}`)
	if err != nil {
		return result{}, result{}, err
	}
	m, err := c.campaign(srv, aud, `"channel":"email","content":{"subject":"News for {{first_name}}","text":"Hello {{first_name}}, new arrivals.","html":"<p>Hello <b>{{first_name}}</b></p>"}`, relay.Count)
	if err != nil {
		return result{}, result{}, fmt.Errorf("e-mail campaign: %w", err)
	}
	w, err := c.campaign(srv, aud, `"channel":"whatsapp","template_id":"`+approvedTemplate+`","content":{"parameters":["{{first_name}}"]}`, api.Count)
	if err != nil {
		return result{}, result{}, fmt.Errorf("whatsapp campaign: %w", err)
	}
	return m, w, nil
}

// client calls the admin API.
type client struct {
	http        *http.Client
	base, token string
}

func (c *client) do(method, path, body string, header ...string) (map[string]any, http.Header, error) {
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return nil, nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return out, resp.Header, nil
}

// create posts body and returns the new resource's id and the event
// position.
func (c *client) create(path, body string) (string, string, error) {
	out, h, err := c.do(http.MethodPost, path, body)
	if err != nil {
		return "", "", err
	}
	id, _ := out["data"].(map[string]any)["id"].(string)
	return id, h.Get("X-Event-Position"), nil
}

// approveTemplate posts the template_approved fixture, signed.
func (c *client) approveTemplate() error {
	b, err := os.ReadFile("ingest/whatsapp/testdata/template_approved.json")
	if err != nil {
		return fmt.Errorf("run from the repository's root: %w", err)
	}
	b = bytes.ReplaceAll(b, []byte(fixtureWABA), []byte(waba))
	req, _ := http.NewRequest(http.MethodPost, c.base+whreceiver.Path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(whreceiver.HeaderSignature, whreceiver.Sign([]byte(appSecret), b))
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("template webhook: %d", resp.StatusCode)
	}
	return nil
}

// campaign creates a campaign of attrs to the audience, launches it and
// waits until it is completed, sampling the server's memory.
func (c *client) campaign(srv *benchkit.Server, aud, attrs string, received func() int) (result, error) {
	id, pos, err := c.create("/api/v1/campaigns", `{"data":{"attributes":{"name":"Bench","audience_id":"`+aud+`",`+attrs+`}}}`)
	if err != nil {
		return result{}, err
	}
	before := received()
	rss0, _ := srv.RSS()
	cpu0, _ := srv.CPU()
	start := time.Now()
	out, _, err := c.do(http.MethodPost, "/api/v1/campaigns/"+id+"/launch", "", "X-Wait-For-Position", pos)
	if err != nil {
		return result{}, err
	}
	launched := time.Now()
	_ = out
	if debugAddr != "" {
		name := "sending-whatsapp.prof"
		if bytes.Contains([]byte(attrs), []byte(`"email"`)) {
			name = "sending-email.prof"
		}
		go profile(name, 8*time.Second)
	}
	var res result
	res.rssStartMB = float64(rss0) / (1 << 20)
	maxRSS := rss0
	err = benchkit.WaitFor(30*time.Minute, "the campaign completes", func() bool {
		if r, err := srv.RSS(); err == nil && r > maxRSS {
			maxRSS = r
		}
		got, _, err := c.do(http.MethodGet, "/api/v1/campaigns/"+id, "")
		if err != nil {
			return false
		}
		a := got["data"].(map[string]any)["attributes"].(map[string]any)
		if a["status"] != "completed" {
			time.Sleep(100 * time.Millisecond)
			return false
		}
		res.recipients = int(a["recipients"].(float64))
		return true
	})
	if err != nil {
		return result{}, err
	}
	done := time.Now()
	cpu1, _ := srv.CPU()
	res.seconds = done.Sub(launched).Seconds()
	res.perSecond = float64(res.recipients) / done.Sub(start).Seconds()
	res.cpuCores = (cpu1 - cpu0).Seconds() / done.Sub(start).Seconds()
	res.rssMaxMB = float64(maxRSS) / (1 << 20)
	res.received = received() - before
	return res, nil
}

// bareLoops sends for d through the same clients to the same receivers
// from k goroutines and returns each channel's messages per second.
func bareLoops(relay *smtptest.Server, api *whatsapptest.Server, k int, d time.Duration) (float64, float64) {
	sender := &email.Sender{Addr: relay.Addr}
	mailRate := loop(k, d, func(i int) error {
		_, err := sender.Send(context.Background(), email.Message{From: mail.Address{Name: "Bench", Address: "news@bench.example.com"},
			To: mail.Address{Address: fmt.Sprintf("c%d@shop.example.test", i)}, Subject: "News for Ada", Text: "Hello Ada, new arrivals.",
			HTML: "<p>Hello <b>Ada</b></p>", Date: time.Now()})
		return err
	})
	wa, err := whatsapp.New(whatsapp.Config{BaseURL: api.URL, HTTP: benchkit.Client(k, 30*time.Second)})
	if err != nil {
		fail(err)
	}
	waRate := loop(k, d, func(i int) error {
		_, err := wa.SendTemplate(context.Background(), phoneNumberID, accessToken, fmt.Sprintf("+1555%07d", i),
			whatsapp.Template{Name: "order_confirmation", Language: "en_US", Body: []string{"Ada"}})
		return err
	})
	return mailRate, waRate
}

func loop(k int, d time.Duration, send func(i int) error) float64 {
	var n, errs atomic.Int64
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < k; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := send(int(n.Load())); err != nil {
					errs.Add(1)
					continue
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if errs.Load() > 0 {
		fmt.Fprintf(os.Stderr, "sending: %d bare sends failed\n", errs.Load())
	}
	return float64(n.Load()) / time.Since(start).Seconds()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "sending:", err)
	os.Exit(1)
}
