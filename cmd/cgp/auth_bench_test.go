package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// BenchmarkAuthenticatedRequest measures what authentication adds to an
// admin request on the embedded default, as the server is wired: brute-force
// check, token lookup (cached), plan and scope check, rate limit and
// last-use record, around a handler that does nothing. The baseline runs
// the bare handler.
func BenchmarkAuthenticatedRequest(b *testing.B) {
	dir := b.TempDir()
	cfg := testConfig(dir)
	cfg.RateAgency = 10_000_000 // measure the limiter, never trip it
	core, err := OpenCore(context.Background(), cfg, newLogger(&Config{LogLevel: "error"}, io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	app, err := OpenApp(context.Background(), cfg, core)
	if err != nil {
		b.Fatal(err)
	}
	defer app.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Runtime.Run(ctx) }()
	defer func() { cancel(); app.Runtime.Close(); <-done }()
	meta := cliMeta()
	acc, _ := core.Commands.CreateAccount(ctx, createAccount("Bench", "agency"), meta)
	shop, err := core.Commands.CreateShop(ctx, createShop(acc.ID, "bench-auth.example.com"), meta)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := core.Commands.IssueToken(ctx, issueToken(shop.ID, "customers:read"), meta)
	if err != nil {
		b.Fatal(err)
	}
	if err := app.Runtime.WaitFor(ctx, tok.Position); err != nil {
		b.Fatal(err)
	}
	noop := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	guarded := app.Auth.Require(domain.Scope("customers:read"), noop)
	req := httptest.NewRequest(http.MethodGet, "/api/v1/customers", nil)
	req.RemoteAddr = "127.0.0.1:5555"
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	stack, err := httpapi.NewStack(httpapi.StackConfig{Logger: zerolog.New(os.Stderr).Level(zerolog.ErrorLevel)})
	if err != nil {
		b.Fatal(err)
	}
	// Both run behind the same middleware stack (request id, client
	// address, recovery); the difference is what authentication adds.
	for name, h := range map[string]http.Handler{"bare": stack.Wrap(noop), "authenticated": stack.Wrap(guarded)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusNoContent {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
