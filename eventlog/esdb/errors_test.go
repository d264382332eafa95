package esdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/eventlog/esdb/internal/fakeesdb"
)

// rawClient returns a client of the EventStoreDB library for url.
func rawClient(t *testing.T, url string) *es.Client {
	t.Helper()
	conf, err := es.ParseConnectionString(url)
	if err != nil {
		t.Fatal(err)
	}
	conf.Logger = es.NoopLogging()
	c, err := es.NewClient(conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clientErrors provokes real *es.Error values from the client: their fields
// are unexported, so a server (here the fake) is the only honest source.
func clientErrors(t *testing.T) map[string]error {
	t.Helper()
	srv, err := fakeesdb.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := rawClient(t, srv.URL())
	ev := es.EventData{EventID: uuid.New(), EventType: "T", Data: []byte("x")}
	if _, err := c.AppendToStream(ctx, "s-1", es.AppendToStreamOptions{ExpectedRevision: es.NoStream{}}, ev); err != nil {
		t.Fatal(err)
	}
	ev.EventID = uuid.New()
	_, wrongVersion := c.AppendToStream(ctx, "s-1", es.AppendToStreamOptions{ExpectedRevision: es.NoStream{}}, ev)

	rs, err := c.ReadStream(ctx, "missing-1", es.ReadStreamOptions{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	_, notFound := rs.Recv()
	rs.Close()

	closedClient := rawClient(t, srv.URL())
	_ = closedClient.Close()
	_, closed := closedClient.AppendToStream(ctx, "s-1", es.AppendToStreamOptions{}, ev)

	// A port nobody listens on: discovery fails with Unavailable.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := lis.Addr().String()
	_ = lis.Close()
	dead := rawClient(t, "esdb://"+deadAddr+"?tls=false&maxDiscoverAttempts=1&discoveryInterval=1")
	_, unavailable := dead.AppendToStream(ctx, "s-1", es.AppendToStreamOptions{}, ev)

	errs := map[string]error{
		"wrong version": wrongVersion, "not found": notFound, "closed": closed, "unavailable": unavailable,
	}
	for name, err := range errs {
		var e *es.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: client returned %v (%T), not an *es.Error", name, err, err)
		}
	}
	return errs
}

func TestClassifyClientErrors(t *testing.T) {
	errs := clientErrors(t)
	wrap := func(err error) error {
		return fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", err))
	}
	cases := []struct {
		name                                      string
		wrongVersion, notFound, closed, transient bool
	}{
		{"wrong version", true, false, false, false},
		{"not found", false, true, false, false},
		{"closed", false, false, true, true},
		{"unavailable", false, false, false, true},
	}
	for _, tc := range cases {
		for _, err := range []error{errs[tc.name], wrap(errs[tc.name])} {
			if got := isWrongExpectedVersion(err); got != tc.wrongVersion {
				t.Errorf("%s: isWrongExpectedVersion(%v) = %v", tc.name, err, got)
			}
			if got := isNotFound(err); got != tc.notFound {
				t.Errorf("%s: isNotFound(%v) = %v", tc.name, err, got)
			}
			if got := isConnectionClosed(err); got != tc.closed {
				t.Errorf("%s: isConnectionClosed(%v) = %v", tc.name, err, got)
			}
			if got := isTransient(err); got != tc.transient {
				t.Errorf("%s: isTransient(%v) = %v", tc.name, err, got)
			}
			if isPermanent(err) {
				t.Errorf("%s: isPermanent(%v) = true", tc.name, err)
			}
		}
	}
}

// TestClientFromErrorIsUnusable pins the client behaviour the adapter
// avoids: es.FromError reports ok=true only for nil and, on a wrapped
// error, loses the code. If a client upgrade fixes it, this fails and the
// workaround can be revisited.
func TestClientFromErrorIsUnusable(t *testing.T) {
	errs := clientErrors(t)
	if _, ok := es.FromError(nil); !ok {
		t.Error("FromError(nil) ok = false: the client changed")
	}
	direct, ok := es.FromError(errs["wrong version"])
	if ok || direct.Code() != es.ErrorCodeWrongExpectedVersion {
		t.Errorf("FromError(direct) = %v, %v: the client changed", direct.Code(), ok)
	}
	wrapped, _ := es.FromError(fmt.Errorf("append: %w", errs["wrong version"]))
	if wrapped.Code() == es.ErrorCodeWrongExpectedVersion {
		t.Error("FromError now sees through wrapping: the client changed")
	}
	if !isWrongExpectedVersion(fmt.Errorf("append: %w", errs["wrong version"])) {
		t.Error("the adapter misses a wrapped conflict")
	}
}

func TestClassifyGRPCStatus(t *testing.T) {
	cases := []struct {
		code                 codes.Code
		transient, permanent bool
		invalidPosition      bool
	}{
		{codes.Unavailable, true, false, false},
		{codes.DeadlineExceeded, true, false, false},
		{codes.Aborted, true, false, false},
		{codes.ResourceExhausted, true, false, false},
		{codes.PermissionDenied, false, true, false},
		{codes.Unauthenticated, false, true, false},
		{codes.Unimplemented, false, true, false},
		{codes.InvalidArgument, false, true, true},
		{codes.Unknown, false, false, false},
		{codes.Internal, false, false, false},
	}
	for _, tc := range cases {
		// As a subscription drop reports it, and wrapped.
		for _, err := range []error{status.Error(tc.code, "x"), fmt.Errorf("drop: %w", status.Error(tc.code, "x"))} {
			if got := isTransient(err); got != tc.transient {
				t.Errorf("%s: isTransient = %v", tc.code, got)
			}
			if got := isPermanent(err); got != tc.permanent {
				t.Errorf("%s: isPermanent = %v", tc.code, got)
			}
			if got := isInvalidPosition(err); got != tc.invalidPosition {
				t.Errorf("%s: isInvalidPosition = %v", tc.code, got)
			}
		}
	}
	for _, err := range []error{io.EOF, errors.New("plain")} {
		if isTransient(err) || isPermanent(err) || isInvalidPosition(err) {
			t.Errorf("%v classified", err)
		}
	}
}

func TestWrapErr(t *testing.T) {
	errs := clientErrors(t)
	ctx := context.Background()

	err := wrapErr(ctx, "append to s-1", errs["unavailable"])
	if !errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("transient failure %v does not match ErrUnavailable", err)
	}
	var e *es.Error
	if !errors.As(err, &e) || e.Code() != es.ErrorUnavailable {
		t.Errorf("transient failure %v lost the client's error", err)
	}
	if err := wrapErr(ctx, "append to s-1", errs["wrong version"]); errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("conflict %v matches ErrUnavailable", err)
	}

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	err = wrapErr(canceled, "append to s-1", errs["unavailable"])
	if !errors.Is(err, context.Canceled) || errors.Is(err, eventlog.ErrUnavailable) {
		t.Errorf("failure after cancellation = %v, want context.Canceled only", err)
	}

	closing, cancelCause := context.WithCancelCause(ctx)
	cancelCause(eventlog.ErrClosed)
	if err := wrapErr(closing, "read all", errs["unavailable"]); !errors.Is(err, eventlog.ErrClosed) {
		t.Errorf("failure while closing = %v, want ErrClosed", err)
	}
}
