// Package benchkit holds what the whole-system benchmark programs under
// bench/ share: running the cgp binary (its CLI on a data directory, and
// cgp serve on a free loopback port, counting its error and alert log
// lines, reading its CPU time and resident memory from /proc), signing
// commerce webhook deliveries the way the platform does, HTTP clients (one
// bound to a source address), pacing an open-loop load, and reducing the
// measurements to percentiles and medians.
package benchkit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// CLI runs the binary's CLI with --data-dir dir and decodes the JSON object
// it prints.
func CLI(bin, dir string, args ...string) (map[string]any, error) {
	out, err := exec.Command(bin, append(args, "--data-dir", dir)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return nil, fmt.Errorf("cgp %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("cgp %s: %w", strings.Join(args, " "), err)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("cgp %s: decode output: %w", strings.Join(args, " "), err)
	}
	return v, nil
}

// Tenant is an account and one shop made with the CLI.
type Tenant struct {
	AccountID string
	ShopID    string
	Domain    string // the shop's domain, sent as X-Commerce-Shop-Domain
	Secret    string // the shop's webhook secret
}

// NewTenant creates an account and a shop on plan, with the CLI of bin on
// the data directory dir.
func NewTenant(bin, dir, name, domain, secret, plan string) (Tenant, error) {
	acc, err := CLI(bin, dir, "accounts", "create", "--name", name, "--plan", plan)
	if err != nil {
		return Tenant{}, err
	}
	t := Tenant{Domain: domain, Secret: secret}
	if t.AccountID, err = field(acc, "id"); err != nil {
		return Tenant{}, fmt.Errorf("accounts create: %w", err)
	}
	shop, err := CLI(bin, dir, "shops", "create", "--account", t.AccountID, "--domain", domain,
		"--plan", plan, "--webhook-secret", secret)
	if err != nil {
		return Tenant{}, err
	}
	if t.ShopID, err = field(shop, "id"); err != nil {
		return Tenant{}, fmt.Errorf("shops create: %w", err)
	}
	return t, nil
}

// Token creates an API token of the tenant's shop with the given scopes
// (comma-separated) and returns it.
func (t Tenant) Token(bin, dir, scopes string, extra ...string) (string, error) {
	tok, err := CLI(bin, dir, append([]string{"tokens", "create", "--shop", t.ShopID, "--scopes", scopes}, extra...)...)
	if err != nil {
		return "", err
	}
	s, err := field(tok, "token")
	if err != nil {
		return "", fmt.Errorf("tokens create: %w", err)
	}
	return s, nil
}

func field(m map[string]any, key string) (string, error) {
	s, ok := m[key].(string)
	if !ok || s == "" {
		return "", fmt.Errorf("no %q in the output", key)
	}
	return s, nil
}

// Server is a running cgp serve process.
type Server struct {
	// Base is the server's URL, http://127.0.0.1:<port>.
	Base string
	// ErrorLines and AlertLines count the log lines at level error and
	// the lines carrying an "alert" field (never their content).
	ErrorLines, AlertLines atomic.Int64

	cmd    *exec.Cmd
	onLine func([]byte)
}

// StartTimeout bounds how long Start waits for the server to listen.
const StartTimeout = 30 * time.Second

// Start runs `bin serve` on a free loopback port on the data directory dir,
// with the extra arguments, and waits until it logs the address it listens
// on (a first start building its read models answers 503 there meanwhile).
func Start(bin, dir string, extra ...string) (*Server, error) {
	return StartWatching(bin, dir, nil, extra...)
}

// StartWatching is Start, with onLine called with every line the server
// logs (JSON), from the goroutine reading the log.
func StartWatching(bin, dir string, onLine func(line []byte), extra ...string) (*Server, error) {
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CGP_LOG_LEVEL=info")
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{cmd: cmd, onLine: onLine}
	addrc := make(chan string, 1)
	// Reads the server's log until the server exits (the pipe closes), so
	// that the server never blocks on a full pipe.
	go s.readLog(stderr, addrc)
	select {
	case a := <-addrc:
		s.Base = "http://" + a
		return s, nil
	case <-time.After(StartTimeout):
		_ = s.Stop()
		return nil, errors.New("server did not start")
	}
}

func (s *Server) readLog(r io.Reader, addrc chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if s.onLine != nil {
			s.onLine(sc.Bytes())
		}
		var m struct {
			Level, Message, Addr string
			Alert                string `json:"alert"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		// The first address logged: a first start that builds its read
		// models listens (answering 503) long before it logs "serving".
		if m.Message == "serving" || m.Message == "http server listening" {
			select {
			case addrc <- m.Addr:
			default:
			}
		}
		if m.Level == "error" {
			s.ErrorLines.Add(1)
		}
		if m.Alert != "" {
			s.AlertLines.Add(1)
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop interrupts the server (it drains and flushes) and waits for it to
// exit.
func (s *Server) Stop() error {
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		return fmt.Errorf("interrupt server: %w", err)
	}
	if err := s.cmd.Wait(); err != nil {
		return fmt.Errorf("server exit: %w", err)
	}
	return nil
}

// WaitFor calls ok every 20 ms until it returns true or timeout passes.
func WaitFor(timeout time.Duration, what string, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// WaitProjections waits until every projector's lag on the server's
// /metrics (cgp_projection_lag_positions) is at most maxLag positions.
func (s *Server) WaitProjections(client *http.Client, maxLag float64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var lagging []string
		st := 0
		resp, err := client.Get(s.Base + "/metrics")
		if err == nil {
			st = resp.StatusCode
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && st == http.StatusOK {
				for _, line := range strings.Split(string(body), "\n") {
					rest, ok := strings.CutPrefix(line, "cgp_projection_lag_positions{")
					if !ok {
						continue
					}
					labels, value, _ := strings.Cut(rest, "} ")
					if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil && v > maxLag {
						lagging = append(lagging, labels+"="+value)
					}
				}
				if len(lagging) == 0 {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("projections still lagging after %v: %v (metrics %d %v)", timeout, lagging, st, err)
		}
		time.Sleep(time.Second)
	}
}
