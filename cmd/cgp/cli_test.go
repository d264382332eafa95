package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCLIExitCodesAndOutput(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"unknown flag", []string{"accounts", "create", "--nope", "--data-dir", dir}, 2, "unknown flag"},
		{"missing flag", []string{"accounts", "create", "--name", "x", "--data-dir", dir}, 2, "--plan"},
		{"bad plan", []string{"accounts", "create", "--name", "x", "--plan", "gold", "--data-dir", dir}, 2, "plan"},
		{"missing subcommand", []string{"tokens", "--data-dir", dir}, 2, "subcommand"},
		{"bad config", []string{"accounts", "create", "--name", "x", "--plan", "agency", "--event-log", "kafka", "--data-dir", dir}, 2, "event-log"},
		{"unknown shop", []string{"tokens", "create", "--shop", "shop_missing", "--scopes", "*", "--data-dir", dir}, 1, "shop not found"},
	}
	for _, c := range cases {
		code, stdout, stderr := runCLI(c.args...)
		if code != c.code || !strings.Contains(stderr, c.err) || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d mentioning %q", c.name, code, stdout, stderr, c.code, c.err)
		}
	}
	code, stdout, stderr := runCLI("accounts", "create", "--name", "Acme", "--plan", "enterprise", "--data-dir", dir)
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &v) != nil || !strings.HasPrefix(v["id"].(string), "acc_") || stderr != "" {
		t.Fatalf("accounts create: exit %d, %q, %q", code, stdout, stderr)
	}
	shop := cli(t, dir, "shops", "create", "--account", v["id"].(string), "--domain", "acme.example.com", "--plan", "enterprise",
		"--webhook-secret", strings.Repeat("s", 20))
	if code, _, stderr := runCLI("tokens", "create", "--shop", shop["id"].(string), "--scopes", "*", "--env", "prod", "--data-dir", dir); code != 2 || !strings.Contains(stderr, "environment") {
		t.Errorf("bad environment: exit %d, %q", code, stderr)
	}
	if fi, err := os.Stat(filepath.Join(dir, "master.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("master key file: %v %v", fi, err)
	}
}

func TestCLIEnvironmentTwins(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CGP_DATA_DIR", dir)
	code, stdout, stderr := runCLI("accounts", "create", "--name", "Env", "--plan", "agency")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "events.db")); err != nil {
		t.Fatalf("CGP_DATA_DIR not used: %v (%s)", err, stdout)
	}
	// A flag on the command line wins over its environment twin.
	other := t.TempDir()
	if code, _, stderr := runCLI("accounts", "create", "--name", "Flag", "--plan", "agency", "--data-dir", other); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(other, "events.db")); err != nil {
		t.Fatalf("--data-dir did not win over CGP_DATA_DIR: %v", err)
	}
	t.Setenv("CGP_LOG_LEVEL", "loud")
	if code, _, stderr := runCLI("accounts", "create", "--name", "x", "--plan", "agency"); code != 2 || !strings.Contains(stderr, "log-level") {
		t.Fatalf("bad CGP_LOG_LEVEL: exit %d %q", code, stderr)
	}
}
