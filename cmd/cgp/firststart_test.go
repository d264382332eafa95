package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/replay"
)

// TestFirstStartBuildsReadModelsLikeAReplay: a server started on a log
// without read models builds them the replay's way before serving,
// answering 503 (and /healthz 200) on its socket meanwhile, and then serves
// the same reads as a server whose projections folded the same log live.
func TestFirstStartBuildsReadModelsLikeAReplay(t *testing.T) {
	built, live := t.TempDir(), t.TempDir()
	tn := newTenant(t, built, "first.example.com", "agency", "customers:read,orders:read")
	out := cli(t, built, "dev", "generate", "--shop", tn.shopID, "--customers", "150", "--orders", "400", "--seed", "3", "--workers", "4")
	pos := fmtAny(out["position"])
	if _, err := os.Stat(filepath.Join(built, replay.DefaultVersion)); err == nil {
		t.Fatal("read models exist before the first start")
	}
	for _, f := range []string{"events.db", "vault.db", "master.key"} { // the same log, keys and master key
		b, err := os.ReadFile(filepath.Join(built, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(live, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	addr := make(chan string, 1)
	started, release := make(chan struct{}), make(chan struct{})
	cfg := testConfig(built)
	cfg.InitialBuildEvents = 1
	cfg.Test.Listening = func(a string) { addr <- a }
	cfg.Test.InitialBuildStarted = func() { close(started); <-release }
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done, ready := make(chan error, 1), make(chan struct{})
	go func() { done <- serve(ctx, cfg, &syncBuffer{}, logs, func(string) { close(ready) }) }()
	stopped := false
	defer func() {
		http.DefaultClient.CloseIdleConnections()
		cancel()
		if !stopped {
			if err := <-done; err != nil {
				t.Errorf("server stopped with error: %v", err)
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		stopped = true
		t.Fatalf("server did not start: %v", err)
	}
	select {
	case <-started:
	case err := <-done:
		stopped = true
		t.Fatalf("server stopped before building: %v", err)
	case <-ready:
		t.Fatal("the server serves without building its read models")
	}
	// While it builds: alive, not ready, every request 503 with the envelope.
	if r := do(t, http.MethodGet, base+"/healthz", nil, nil); r.status != http.StatusOK {
		t.Fatalf("/healthz while building: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/readyz", "/api/v1/customers?limit=5"} {
		r := do(t, http.MethodGet, base+path, nil, map[string]string{"Authorization": "Bearer " + tn.token})
		if r.status != http.StatusServiceUnavailable || r.errorCode(t) != "unavailable" || r.header.Get("Retry-After") == "" {
			t.Fatalf("%s while building: %d %v %s", path, r.status, r.header, r.body)
		}
	}
	close(release)
	select {
	case <-ready:
	case err := <-done:
		stopped = true
		t.Fatalf("server stopped: %v", err)
	case <-time.After(5 * time.Minute):
		t.Fatal("the build did not end within 5 minutes")
	}
	if !strings.Contains(logs.String(), "first start: read models built") {
		t.Fatalf("no build in the logs:\n%s", logs.String())
	}
	if _, err := os.Stat(filepath.Join(built, replay.PointerFile)); err != nil {
		t.Fatalf("no read-model version switched to: %v", err)
	}

	other := startServer(t, live) // folds the same log live (no initial build in tests)
	for _, page := range []string{"/api/v1/customers?limit=100", "/api/v1/customers?limit=100&sort=-total_spent", "/api/v1/orders?limit=100"} {
		a := do(t, http.MethodGet, base+page, nil, map[string]string{"Authorization": "Bearer " + tn.token, "X-Wait-For-Position": pos})
		b := other.get(t, page, tn.token, "X-Wait-For-Position", pos)
		// The bodies' links name each server's own address.
		ab, bb := strings.ReplaceAll(string(a.body), base, "BASE"), strings.ReplaceAll(string(b.body), other.base, "BASE")
		if a.status != http.StatusOK || b.status != http.StatusOK || ab != bb {
			t.Fatalf("GET %s: built %d, live %d; bodies differ (%d and %d bytes)", page, a.status, b.status, len(ab), len(bb))
		}
	}
	if strings.Contains(other.logs.String(), "first start") {
		t.Fatal("a server with InitialBuildEvents 0 built at first start")
	}
}

// TestStartWithReadModelsDoesNotBuild: a data directory that has read
// models is never rebuilt at start, whatever the log's size.
func TestStartWithReadModelsDoesNotBuild(t *testing.T) {
	dir := t.TempDir()
	newTenant(t, dir, "again.example.com", "agency", "customers:read")
	s := startServer(t, dir)
	s.stop()
	s = startServerWith(t, dir, func(c *Config) { c.InitialBuildEvents = 1 })
	eventually(t, minEventually, "ready", func() bool { return s.get(t, "/readyz", "").status == http.StatusOK })
	if logs := s.logs.String(); strings.Contains(logs, "first start") {
		t.Fatalf("rebuilt at start:\n%s", logs)
	}
}
