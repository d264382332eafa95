package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/eventlog"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// cgpBinary builds the binary once per test run, the way `make build` does.
func cgpBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "cgp-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "cgp")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// process is a running `cgp serve`.
type process struct {
	cmd    *exec.Cmd
	base   string
	stderr *syncBuffer
	exited chan struct{}
}

// startBinary starts `cgp serve` on dir, with env added to its
// environment.
func startBinary(t *testing.T, dir string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(cgpBinary(t), "serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(append(os.Environ(), "CGP_DATA_DIR="+dir, "CGP_LOG_LEVEL=info", "CGP_MAX_WAIT_FOR_POSITION=60s"), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Bytes()
			p.stderr.Write(append(append([]byte(nil), line...), '\n'))
			var m struct {
				Message, Addr string
			}
			if json.Unmarshal(line, &m) == nil && m.Message == "serving" {
				select {
				case addr <- m.Addr:
				default:
				}
			}
		}
	}()
	go func() { cmd.Wait(); close(p.exited) }()
	select {
	case a := <-addr:
		p.base = "http://" + a
	case <-p.exited:
		t.Fatalf("cgp serve exited: %s", p.stderr.String())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("cgp serve did not start within 30 s")
	}
	t.Cleanup(func() { p.kill(syscall.SIGKILL) })
	return p
}

func (p *process) kill(sig syscall.Signal) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// binaryCLI runs a cgp command as its own process.
func binaryCLI(t *testing.T, dir string, args ...string) map[string]any {
	t.Helper()
	cmd := exec.Command(cgpBinary(t), args...)
	cmd.Env = append(os.Environ(), "CGP_DATA_DIR="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("cgp %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("cgp %s printed %q", strings.Join(args, " "), out.String())
	}
	return v
}

func binaryTenant(t *testing.T, dir, domain string) tenant {
	t.Helper()
	acc := binaryCLI(t, dir, "accounts", "create", "--name", "Binary Co", "--plan", "agency")
	secret := "binary-secret-0123456789"
	shop := binaryCLI(t, dir, "shops", "create", "--account", acc["id"].(string), "--domain", domain, "--plan", "agency", "--webhook-secret", secret)
	tok := binaryCLI(t, dir, "tokens", "create", "--shop", shop["id"].(string), "--scopes", "*")
	return tenant{accountID: acc["id"].(string), shopID: shop["id"].(string), domain: domain, secret: secret,
		token: tok["token"].(string), position: uint64(tok["position"].(float64))}
}

func TestBinaryServesTheSlice(t *testing.T) {
	dir := t.TempDir()
	p := startBinary(t, dir)
	s := &testServer{t: t, base: p.base}
	// Made by separate processes while the server runs.
	tn := binaryTenant(t, dir, "binary.example.com")
	waitForToken(t, s, tn)
	r := s.webhook(t, tn, "customers/create", "bin-1", customerPayload(31337, "bin@example.com", 2, "50.00", "2026-10-01T10:00:00Z"))
	if r.status != 200 {
		t.Fatalf("webhook: %d %s", r.status, r.body)
	}
	got := s.get(t, "/api/v1/customers?filter[lifecycle_stage]=active", tn.token, "X-Wait-For-Position", r.position(t))
	data := got.json(t)["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["attributes"].(map[string]any)["email"] != "bin@example.com" {
		t.Fatalf("list: %s", got.body)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/api/v1/openapi.json"} {
		if r := s.get(t, path, ""); r.status != 200 {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
	}
	metrics := string(s.get(t, "/metrics", "").body)
	if !strings.Contains(metrics, "cgp_projection") {
		t.Errorf("no projection metrics in /metrics")
	}
	// SIGTERM drains and exits cleanly.
	p.kill(syscall.SIGTERM)
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code after SIGTERM: %d\n%s", code, p.stderr.String())
	}
	rep := binaryCLI(t, dir, "audit", "verify", "--shop", tn.shopID)
	if rep["intact"] != true || rep["events_checked"].(float64) < 3 {
		t.Fatalf("audit verify: %v", rep)
	}
}

func TestSIGKILLDuringBurstLosesNothingAcknowledged(t *testing.T) {
	dir := t.TempDir()
	p := startBinary(t, dir)
	s := &testServer{t: t, base: p.base}
	tn := binaryTenant(t, dir, "burst.example.com")
	waitForToken(t, s, tn)

	const workers, killAfter = 32, 400
	order := fixture(t, "orders/create")
	var acked sync.Map
	var nAcked atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	client := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && i < 1000; i++ {
				delivery := fmt.Sprintf("burst-%d-%d", w, i)
				topic, body := burstDelivery(order, w, i)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/webhooks/events", bytes.NewReader(body))
				for k, v := range webhookHeaders(tn, topic, delivery, body) {
					req.Header.Set(k, v)
				}
				resp, err := client.Do(req)
				if err != nil {
					return // the server is gone
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					acked.Store(delivery, true)
					if nAcked.Add(1) == killAfter {
						p.cmd.Process.Signal(syscall.SIGKILL)
					}
				}
			}
		}()
	}
	wg.Wait()
	<-p.exited
	if nAcked.Load() < killAfter {
		t.Fatalf("only %d deliveries acknowledged before the burst ended", nAcked.Load())
	}
	events := readLog(t, dir)
	byID := map[string]int{}
	for _, e := range events {
		byID[e.ID.String()]++
	}
	missing, doubled := 0, 0
	acked.Range(func(k, _ any) bool {
		switch byID[eventlog.DeterministicID("commerce", tn.shopID, k.(string)).String()] {
		case 0:
			missing++
		case 1:
		default:
			doubled++
		}
		return true
	})
	t.Logf("%d deliveries acknowledged before SIGKILL; %d events in the log", nAcked.Load(), len(events))
	if missing != 0 || doubled != 0 {
		t.Fatalf("after SIGKILL: %d acknowledged deliveries missing, %d recorded twice", missing, doubled)
	}

	// After a restart the acknowledged customers are served, and
	// redelivering them appends nothing.
	p2 := startBinary(t, dir)
	s2 := &testServer{t: t, base: p2.base}
	var redelivered string
	acked.Range(func(k, _ any) bool { redelivered = k.(string); return false })
	var w, i int
	fmt.Sscanf(redelivered, "burst-%d-%d", &w, &i)
	topic, body := burstDelivery(order, w, i)
	r := s2.webhook(t, tn, topic, redelivered, body)
	if r.status != 200 {
		t.Fatalf("redelivery after restart: %d %s", r.status, r.body)
	}
	list := s2.get(t, "/api/v1/customers?limit=1", tn.token, "X-Wait-For-Position", fmt.Sprint(len(events)))
	if list.status != 200 {
		t.Fatalf("list after restart: %d %s", list.status, list.body)
	}
	p2.kill(syscall.SIGTERM)
	if n := countEvent(readLog(t, dir), eventlog.DeterministicID("commerce", tn.shopID, redelivered).String()); n != 1 {
		t.Fatalf("redelivered event recorded %d times", n)
	}
}

// burstDelivery is delivery i of burst worker w: customers on even
// workers, orders (each its own, for a customer seen on another worker) on
// odd ones.
func burstDelivery(order []byte, w, i int) (string, []byte) {
	if w%2 == 0 {
		return "customers/create", customerPayload(int64(w*10000+i+1), fmt.Sprintf("b%d-%d@example.com", w, i), 1, "1.00", "2026-10-01T10:00:00Z")
	}
	body := bytes.Replace(order, []byte(`"id": 5984321190041`), []byte(fmt.Sprintf(`"id": %d`, 7000000+w*10000+i)), 1)
	return "orders/create", body
}
