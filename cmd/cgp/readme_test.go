package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// quickStart returns the lines of the README's quick-start code block.
func quickStart(t *testing.T) (readme string, lines []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme = string(b)
	_, after, ok := strings.Cut(readme, "## Quick start\n")
	if !ok {
		t.Fatal("README has no quick start")
	}
	_, block, _ := strings.Cut(after, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	return readme, strings.Split(strings.TrimSpace(block), "\n")
}

// TestREADMEFirstScreenIsTheQuickStart: the README opens with a quick start
// of about ten lines (make run, the token, a curl, an openssl-signed
// webhook, make test); the benchmark tables live in docs/performance.md.
func TestREADMEFirstScreenIsTheQuickStart(t *testing.T) {
	readme, lines := quickStart(t)
	if i := strings.Index(readme, "## Quick start"); i < 0 || strings.Count(readme[:i], "\n") > 8 {
		t.Fatalf("the quick start is not on the first screen")
	}
	if len(lines) > 12 {
		t.Errorf("quick start has %d lines", len(lines))
	}
	block := strings.Join(lines, "\n")
	for _, want := range []string{"make run", "TOKEN=", "openssl dgst -sha256 -hmac", "X-Commerce-Hmac-Sha256", "Authorization: Bearer $TOKEN", "make test"} {
		if !strings.Contains(block, want) {
			t.Errorf("quick start lacks %q", want)
		}
	}
	perf, err := os.ReadFile(filepath.Join("..", "..", "docs", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	tableRow := regexp.MustCompile(`(?m)^\|.*\b(µs|ms|events/s|req/s|/s)\b.*\|$`)
	if rows := tableRow.FindAllString(readme, -1); len(rows) > 0 {
		t.Errorf("README still holds benchmark rows: %q", rows)
	}
	if len(tableRow.FindAllString(string(perf), -1)) < 10 || !strings.Contains(readme, "(docs/performance.md)") {
		t.Errorf("docs/performance.md lacks the tables, or README does not link it")
	}
	if !strings.Contains(readme, "shared/spec/000_43607bbc81b997ee.txt") || !strings.Contains(readme, "make install") || !strings.Contains(readme, "bin/cgp") {
		t.Errorf("README does not say where the specification and the CLI are")
	}
}

// TestREADMEQuickStartWorksWhenPasted runs the quick start's lines, as a
// user pastes them, against the service started as `make run` starts it
// (its demo data), with the export line it printed: the webhook is
// accepted and the customer it carries is listed.
func TestREADMEQuickStartWorksWhenPasted(t *testing.T) {
	for _, tool := range []string{"sh", "curl", "openssl", "base64"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed (.ci/run installs it): %v", tool, err)
		}
	}
	_, lines := quickStart(t)
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) { c.Demo = true })
	export := regexp.MustCompile(`(?m)^\s*(export TOKEN=\S+ SECRET=\S+)$`).FindStringSubmatch(s.stdout.String())
	if export == nil {
		t.Fatalf("make run printed no export line: %s", s.stdout.String())
	}
	var script []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "make "):
			continue // the server runs already; make test is this suite
		case strings.HasPrefix(l, "export TOKEN="):
			l = export[1]
		}
		script = append(script, strings.ReplaceAll(l, "http://127.0.0.1:8080", s.base))
	}
	cmd := exec.Command("sh", "-e", "-c", strings.Join(script, "\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("quick start failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `{"status":"accepted"}`) || !strings.Contains(string(out), `{"data":[`) {
		t.Fatalf("quick start output:\n%s", out)
	}
	// The list usually shows Ada already; under load the projection may
	// lag the webhook by a moment.
	token := strings.TrimPrefix(strings.Fields(export[1])[1], "TOKEN=")
	eventually(t, 60*time.Second, "the quick start's customer listed", func() bool {
		r := s.get(t, "/api/v1/customers", token)
		return r.status == 200 && strings.Contains(string(r.body), `"email":"ada@example.com"`)
	})
}
