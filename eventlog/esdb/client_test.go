package esdb

import (
	"context"
	"errors"
	"testing"
	"time"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/cgp-platform/cgp/eventlog"
)

func TestDiscoveryBound(t *testing.T) {
	single, err := es.ParseConnectionString("esdb://127.0.0.1:2113?tls=false")
	if err != nil {
		t.Fatal(err)
	}
	// Defaults: 10 attempts of (5 s features + 100 ms pause), plus slack.
	if got, want := discoveryBound(single), 10*(5*time.Second+100*time.Millisecond)+2*time.Second; got != want {
		t.Errorf("single node: %s, want %s", got, want)
	}
	cluster, err := es.ParseConnectionString("esdb://a:2113,b:2113,c:2113?tls=false&maxDiscoverAttempts=3&gossipTimeout=2&discoveryInterval=50")
	if err != nil {
		t.Fatal(err)
	}
	// Three seeds, each asked for gossip and features.
	if got, want := discoveryBound(cluster), 3*(6*2*time.Second+50*time.Millisecond)+2*time.Second; got != want {
		t.Errorf("cluster: %s, want %s", got, want)
	}
}

// idleLog is a Log around a client that never connects: clientCall's
// bookkeeping needs no server.
func idleLog(t *testing.T, bound time.Duration) (*Log, *es.Client) {
	t.Helper()
	conf, err := es.ParseConnectionString("esdb://127.0.0.1:1?tls=false&maxDiscoverAttempts=1&discoveryInterval=1")
	if err != nil {
		t.Fatal(err)
	}
	conf.Logger = es.NoopLogging()
	l := &Log{conf: *conf, discoveryBound: bound, calls: make(map[*es.Client]*clientUse)}
	c, err := l.newClient()
	if err != nil {
		t.Fatal(err)
	}
	l.client, l.calls[c] = c, &clientUse{}
	t.Cleanup(func() {
		for c := range l.calls {
			_ = c.Close()
		}
	})
	return l, c
}

// isClosed reports whether c refuses calls without touching the network: a
// closed client answers from its close flag before anything else.
func isClosed(c *es.Client) bool {
	_, err := c.AppendToStream(context.Background(), "s", es.AppendToStreamOptions{})
	return isConnectionClosed(err)
}

func TestClientCallGivesUpOnAStuckClient(t *testing.T) {
	l, c := idleLog(t, 50*time.Millisecond)
	release := make(chan struct{})
	_, err := clientCall(context.Background(), l, c, func() (int, error) {
		<-release // a call queued behind a dead connection state machine
		return 1, nil
	})
	if !errors.Is(err, eventlog.ErrUnavailable) || !errors.Is(err, errClientRetired) {
		t.Fatalf("stuck call = %v, want errClientRetired (ErrUnavailable)", err)
	}
	if l.client == c {
		t.Fatal("stuck client still in use")
	}
	// Not closed under the running call: that would race with its send.
	if use := l.calls[c]; use == nil || !use.retired || use.running != 1 {
		t.Fatalf("bookkeeping of the stuck client: %+v", use)
	}
	close(release)
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		l.mu.RLock()
		_, tracked := l.calls[c]
		l.mu.RUnlock()
		if !tracked {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("retired client not closed after its last call")
		}
	}
	if !isClosed(c) {
		t.Error("retired client left open")
	}
	if isClosed(l.client) {
		t.Error("replacement client closed")
	}
}

func TestClientCallHonoursContext(t *testing.T) {
	l, c := idleLog(t, time.Hour)
	ctx, cancel := context.WithCancelCause(context.Background())
	release, started := make(chan struct{}), make(chan struct{})
	defer close(release)
	go func() {
		<-started
		cancel(eventlog.ErrClosed)
	}()
	_, err := clientCall(ctx, l, c, func() (int, error) {
		close(started)
		<-release
		return 1, nil
	})
	if !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("call whose context ended = %v, want its cause", err)
	}
	if l.client != c || isClosed(c) {
		t.Error("a cancelled call retired a healthy client")
	}
	v, err := clientCall(context.Background(), l, c, func() (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Errorf("call = %d, %v", v, err)
	}
}

func TestRetireIdleClientClosesIt(t *testing.T) {
	l, c := idleLog(t, time.Hour)
	l.retire(c)
	if l.client == c || !isClosed(c) {
		t.Error("idle client not replaced and closed")
	}
	// Retiring twice, or a client that is not the current one, is harmless.
	l.retire(c)
	next := l.client
	l.retire(next)
	if l.client == next || !isClosed(next) {
		t.Error("second client not replaced and closed")
	}
}
