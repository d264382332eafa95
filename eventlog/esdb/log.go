package esdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/cgp-platform/cgp/eventlog"
)

// closeGrace is how long Close lets running operations finish before it
// cancels them, and then how long it waits for the cancelled ones.
const closeGrace = 5 * time.Second

// Log is the EventStoreDB adapter of eventlog.Log. It is safe for concurrent
// use; see the package documentation for how it maps the port.
type Log struct {
	cfg   Config
	conf  es.Configuration // parsed connection string, copied into every client
	codec codec

	// closing ends every operation's context once Close gives up waiting.
	closing     context.Context
	cancelClose context.CancelCauseFunc
	ops         sync.WaitGroup // running operations (not subscriptions)
	closeOnce   sync.Once
	closeErr    error

	// discoveryBound is the longest the client can legitimately keep a
	// call waiting for its connection (a whole node discovery); a call
	// still waiting after it is stuck on a dead client.
	discoveryBound time.Duration

	mu     sync.RWMutex
	closed bool
	client *es.Client                // the client new calls use
	calls  map[*es.Client]*clientUse // every client not yet closed
	subs   map[*subscription]struct{}
}

// clientUse tracks the calls running on a client, so that a replaced
// client is closed only once none is: closing it under a call waiting for
// its connection would race with that call's send.
type clientUse struct {
	running int
	retired bool
}

var _ eventlog.Log = (*Log)(nil)

// Open connects to the EventStoreDB node or cluster named by cfg.URL and
// checks that it answers a read of $all (the adapter needs read access to
// $all for ReadAll, HeadPosition and Subscribe). An unreachable server gives
// an error matching eventlog.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open esdb log: %w", err)
	}
	conf, err := es.ParseConnectionString(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("open esdb log: invalid URL: %s", redact(err.Error(), cfg.URL))
	}
	// The client logs to stdout by default; a library stays quiet and
	// reports through its errors instead.
	conf.Logger = es.NoopLogging()
	closing, cancel := context.WithCancelCause(context.Background())
	l := &Log{
		cfg:            cfg,
		conf:           *conf,
		codec:          codec{prefix: cfg.StreamPrefix, now: cfg.Now},
		closing:        closing,
		discoveryBound: discoveryBound(conf),
		cancelClose:    cancel,
		subs:           make(map[*subscription]struct{}),
		calls:          make(map[*es.Client]*clientUse),
	}
	if l.client, err = l.newClient(); err != nil {
		cancel(nil)
		return nil, fmt.Errorf("open esdb log: %w", err)
	}
	l.calls[l.client] = &clientUse{}
	if err := l.probe(ctx); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("open esdb log: %w", err)
	}
	return l, nil
}

// probe reads the last record of $all: it connects the client and checks
// that the credentials may read $all.
func (l *Log) probe(ctx context.Context) error {
	c, done, err := l.begin()
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := l.opContext(ctx)
	defer cancel()
	_, err = clientCall(ctx, l, c, func() (struct{}, error) {
		rs, err := c.ReadAll(ctx, es.ReadAllOptions{Direction: es.Backwards, From: es.End{}}, 1)
		if err != nil {
			return struct{}{}, err
		}
		defer rs.Close()
		if _, err := rs.Recv(); err != nil && !errors.Is(err, io.EOF) {
			return struct{}{}, err
		}
		return struct{}{}, nil
	})
	if err != nil {
		l.noteErr(c, err)
		return wrapErr(ctx, "read $all", err)
	}
	return nil
}

// discoveryBound is the longest a node discovery of the client configured
// by conf can take: every attempt asks each candidate for its features and,
// for a cluster, first for gossip (each bounded by GossipTimeout), then
// sleeps DiscoveryInterval. Some slack covers dialling and scheduling.
func discoveryBound(conf *es.Configuration) time.Duration {
	asks := 1
	if conf.DnsDiscover || len(conf.GossipSeeds) > 0 {
		asks = 2 * max(1, len(conf.GossipSeeds))
	}
	perAttempt := time.Duration(asks)*time.Duration(conf.GossipTimeout)*time.Second +
		time.Duration(conf.DiscoveryInterval)*time.Millisecond
	return time.Duration(max(1, conf.MaxDiscoverAttempts))*perAttempt + 2*time.Second
}

func (l *Log) newClient() (*es.Client, error) {
	conf := l.conf
	c, err := es.NewClient(&conf)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	return c, nil
}

// begin registers a running operation and returns the client to use, or
// eventlog.ErrClosed once Close has been called. The caller must call the
// returned done.
func (l *Log) begin() (*es.Client, func(), error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, nil, eventlog.ErrClosed
	}
	l.ops.Add(1)
	return l.client, l.ops.Done, nil
}

// opContext derives an operation's context from the caller's: it also ends,
// with cause eventlog.ErrClosed, when Close cancels running operations.
func (l *Log) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(l.closing, func() { cancel(eventlog.ErrClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// currentClient returns the client to use now (subscriptions call it on
// every resubscription).
func (l *Log) currentClient() *es.Client {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.client
}

// noteErr reacts to an error the client returned: a client reporting its
// connection closed while the Log is open has a dead connection state
// machine (after a failed node discovery it refuses every further call), so
// it is retired.
func (l *Log) noteErr(c *es.Client, err error) {
	if err != nil && isConnectionClosed(err) {
		l.retire(c)
	}
}

// retire replaces c, if it is still the current client, by a fresh one that
// will discover the node again on its next call. c is closed once no call
// runs on it any more (at once if none does).
func (l *Log) retire(c *es.Client) {
	l.mu.Lock()
	use := l.calls[c]
	if use == nil || use.retired {
		l.mu.Unlock()
		return
	}
	use.retired = true
	if !l.closed && l.client == c {
		if nc, err := l.newClient(); err == nil {
			l.client = nc
			l.calls[nc] = &clientUse{}
		}
	}
	idle := use.running == 0
	if idle {
		delete(l.calls, c)
	}
	l.mu.Unlock()
	if idle {
		_ = c.Close()
	}
}

// acquire and release count the calls running on c.
func (l *Log) acquire(c *es.Client) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if use := l.calls[c]; use != nil {
		use.running++
	}
}

func (l *Log) release(c *es.Client) {
	l.mu.Lock()
	use := l.calls[c]
	if use == nil {
		l.mu.Unlock()
		return
	}
	use.running--
	idle := use.retired && use.running == 0
	if idle {
		delete(l.calls, c)
	}
	l.mu.Unlock()
	if idle {
		_ = c.Close()
	}
}

// errClientRetired is what a call gets when it gave up on a client whose
// connection state machine is presumed dead.
var errClientRetired = fmt.Errorf("client connection lost: %w", eventlog.ErrUnavailable)

// clientCall runs f, which uses client c, so that the caller is never held
// by the client's connection state machine. The client queues every call on
// an unbuffered channel read by that machine, ignoring contexts: while it
// discovers the node a call waits, and when discovery fails the machine
// exits and the calls queued behind it wait forever. So f runs in its own
// goroutine: the caller returns when f does or ctx ends, and a call still
// running after discoveryBound means c is dead: c is retired and the caller
// gets errClientRetired (matching eventlog.ErrUnavailable) to retry on the
// new client. The goroutine exits when f returns; on a dead client that is
// never, which the package documentation states as a known limit.
func clientCall[T any](ctx context.Context, l *Log, c *es.Client, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	l.acquire(c)
	go func() {
		defer l.release(c)
		v, err := f()
		done <- result{v, err}
	}()
	stuck := time.NewTimer(l.discoveryBound)
	defer stuck.Stop()
	var zero T
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, context.Cause(ctx)
	case <-stuck.C:
		l.retire(c)
		return zero, errClientRetired
	}
}

// register records a running subscription so that Close can end it; it
// reports false once the Log is closed.
func (l *Log) register(s *subscription) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.subs[s] = struct{}{}
	return true
}

func (l *Log) forget(s *subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.subs, s)
}

// Close ends every subscription, lets running operations finish (cancelling
// them after a grace period), then closes the client. Appends are durable
// when they return, so there is nothing to flush. Later calls return the
// first call's result.
func (l *Log) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Log) close() error {
	l.mu.Lock()
	l.closed = true
	subs := make([]*subscription, 0, len(l.subs))
	for s := range l.subs {
		subs = append(subs, s)
	}
	l.mu.Unlock()

	for _, s := range subs {
		_ = s.Close()
	}
	if !waitGroup(&l.ops, closeGrace) {
		l.cancelClose(eventlog.ErrClosed)
		if !waitGroup(&l.ops, closeGrace) {
			return errors.New("close esdb log: operations still running after cancellation")
		}
	}
	l.cancelClose(eventlog.ErrClosed)

	l.mu.Lock()
	clients := make([]*es.Client, 0, len(l.calls))
	for c := range l.calls {
		clients = append(clients, c)
	}
	l.mu.Unlock()
	for _, c := range clients {
		l.retire(c)
	}
	return nil
}

// waitGroup waits for wg up to d and reports whether it finished. On
// timeout its helper goroutine exits when wg finally does.
func waitGroup(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// redact removes the connection string, and the password it may carry, from
// an error message.
func redact(msg, raw string) string {
	if raw != "" {
		msg = strings.ReplaceAll(msg, raw, "<connection string>")
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}
