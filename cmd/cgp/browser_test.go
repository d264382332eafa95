package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The admin interface's browser tests drive a real headless Chromium
// (Debian's `chromium`, installed by .ci/run when missing) with chromedp.
// CGP_CHROMIUM names another binary. `make test` installs the browser
// when missing (scripts/ensure-chromium.sh); without one these tests fail.

// chromiumPath finds the browser.
func chromiumPath() string {
	if p := os.Getenv("CGP_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browserDeadline bounds one browser test: generous, for a loaded machine
// running the race detector.
const browserDeadline = 4 * time.Minute

// newBrowser starts a headless Chromium with its own profile and returns
// a tab's context (closed with the test).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Fatal("no Chromium: `make test` installs Debian's chromium (scripts/ensure-chromium.sh); CGP_CHROMIUM names another binary")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("password-store", "basic"), chromedp.Flag("use-mock-keychain", true),
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserDeadline)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() { bcancel(); acancel(); cancel() })
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	return bctx
}

// inBrowser runs browser steps, failing the test with what on an error.
func inBrowser(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// textOf returns the text of the first element matching the CSS selector.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// evalIn evaluates a JavaScript expression in the page.
func evalIn[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// screenshotDir is where screenshots go: CGP_SCREENSHOTS, else
// test-artifacts/screenshots at the repository's root (ignored by git).
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("CGP_SCREENSHOTS"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "test-artifacts", "screenshots")
}

// screenshot saves the page as name.png for a reviewer (a failure to save
// is logged, not fatal: the screenshots are not the test's subject).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	dir := screenshotDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("screenshot dir: %v", err)
		return
	}
	name = strings.NewReplacer("/", "-", " ", "-").Replace(name)
	if err := os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}
