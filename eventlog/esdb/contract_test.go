package esdb_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/esdb"
	"github.com/cgp-platform/cgp/eventlog/esdb/internal/fakeesdb"
	"github.com/cgp-platform/cgp/eventlog/eventlogtest"
)

// skipLine is the one line printed when no server is configured.
const skipLine = "CGP_ESDB_URL not set: EventStoreDB contract suite skipped (docker compose up, then CGP_ESDB_URL=esdb://127.0.0.1:2113?tls=false)"

// serverURL returns the EventStoreDB to test against, or skips.
func serverURL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv("CGP_ESDB_URL")
	if url == "" {
		tb.Skip(skipLine)
	}
	return url
}

// namespace returns a stream prefix no earlier run used: a real server
// cannot be emptied, so each log the suite opens lives in its own namespace
// and sees an empty log.
func namespace() string {
	return "cgptest" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16] + "_"
}

// openAt opens a log on url for the test and closes it at cleanup.
func openAt(tb testing.TB, url, prefix string) *esdb.Log {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := esdb.Open(ctx, esdb.Config{
		URL:            url,
		StreamPrefix:   prefix,
		ResubscribeMin: 10 * time.Millisecond,
		ResubscribeMax: 200 * time.Millisecond,
	})
	if err != nil {
		tb.Fatalf("open %s log: %v", prefix, err)
	}
	tb.Cleanup(func() {
		if err := l.Close(); err != nil {
			tb.Errorf("close log: %v", err)
		}
	})
	return l
}

// startFake starts a fake EventStoreDB node for the test.
func startFake(tb testing.TB) *fakeesdb.Server {
	tb.Helper()
	srv, err := fakeesdb.Start()
	if err != nil {
		tb.Fatalf("start fake esdb: %v", err)
	}
	tb.Cleanup(srv.Stop)
	return srv
}

// TestContract runs the shared event-log contract against a real
// EventStoreDB or KurrentDB node named by CGP_ESDB_URL.
func TestContract(t *testing.T) {
	url := serverURL(t)
	eventlogtest.Run(t, func(t *testing.T) eventlog.Log { return openAt(t, url, namespace()) })
}

func BenchmarkServer(b *testing.B) {
	url := serverURL(b)
	eventlogtest.Bench(b, func(b *testing.B) eventlog.Log { return openAt(b, url, namespace()) })
}
