package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cgp-platform/cgp/idempotency"
	"github.com/cgp-platform/cgp/idempotency/sqlite"
)

// The helper-process pattern: the test binary re-executes itself with these
// variables set, and TestMain runs the helper instead of the tests.
const (
	helperModeEnv = "CGP_IDEMPOTENCY_SQLITE_HELPER"
	helperPathEnv = "CGP_IDEMPOTENCY_SQLITE_HELPER_PATH"
)

const (
	processKeys       = 20
	processGoroutines = 8
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperModeEnv); mode != "" {
		os.Exit(runHelper(mode, os.Getenv(helperPathEnv)))
	}
	os.Exit(m.Run())
}

// runHelper is the child process. Mode "race" claims each of processKeys
// keys from processGoroutines goroutines at once and prints "started <key>"
// for every Started claim. Mode "complete" claims and completes one key,
// prints "done", and waits to be killed.
func runHelper(mode, path string) int {
	s, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: open:", err)
		return 1
	}
	ctx := context.Background()
	fp := idempotency.Fingerprint("POST", "/api/v1/campaigns", []byte("{}"))
	switch mode {
	case "race":
		var mu sync.Mutex
		var wg sync.WaitGroup
		failed := false
		for k := range processKeys {
			for range processGoroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := s.Begin(ctx, "tok_a", "key-"+strconv.Itoa(k), fp)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err != nil:
						fmt.Fprintln(os.Stderr, "helper: begin:", err)
						failed = true
					case c.Outcome == idempotency.Started:
						_, _ = os.Stdout.WriteString("started " + c.Key + "\n")
					}
				}()
			}
		}
		wg.Wait()
		if err := s.Close(); err != nil || failed {
			fmt.Fprintln(os.Stderr, "helper: close:", err)
			return 1
		}
		return 0
	case "complete":
		c, err := s.Begin(ctx, "tok_a", "crash", fp)
		if err == nil {
			err = s.Complete(ctx, c, idempotency.Response{Status: 201, Body: []byte("made before the crash")})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 1
		}
		_, _ = os.Stdout.WriteString("done\n")
		_, _ = io.Copy(io.Discard, os.Stdin) // until killed (or stdin closes)
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", mode)
	return 2
}

func helper(t *testing.T, mode, path string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperPathEnv+"="+path)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestProcessesRace runs four processes that each race eight goroutines for
// every one of twenty keys on one file: each key is Started exactly once.
func TestProcessesRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "idempotency.db")
	// Create the file first, so that the children do not race to create it.
	s, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	const processes = 4
	var outs [processes]strings.Builder
	cmds := make([]*exec.Cmd, processes)
	for i := range cmds {
		cmds[i] = helper(t, "race", path)
		cmds[i].Stdout = &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v", i, err)
		}
	}
	started := map[string]int{}
	for i := range outs {
		for _, line := range strings.Fields(outs[i].String()) {
			if line != "started" {
				started[line]++
			}
		}
	}
	if len(started) != processKeys {
		t.Errorf("%d keys were started, want %d", len(started), processKeys)
	}
	for k, n := range started {
		if n != 1 {
			t.Errorf("%s was started %d times across processes", k, n)
		}
	}
}

// TestReplayAfterKill kills a process right after it completed a key,
// without closing the store: the completion is in the WAL, and another
// process replays it.
func TestReplayAfterKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "idempotency.db")
	cmd := helper(t, "complete", path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "done\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper said %q, %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: the error is expected

	s, err := sqlite.Open(sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fp := idempotency.Fingerprint("POST", "/api/v1/campaigns", []byte("{}"))
	c, err := s.Begin(context.Background(), "tok_a", "crash", fp)
	if err != nil || c.Outcome != idempotency.Replay || string(c.Response.Body) != "made before the crash" {
		t.Fatalf("Begin after the kill = %v %q, %v; want the stored response", c.Outcome, c.Response.Body, err)
	}
}
