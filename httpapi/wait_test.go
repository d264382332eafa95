package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/httpapi"
)

func TestWithMaxWaitBoundsEveryWait(t *testing.T) {
	if d := httpapi.MaxWait(context.Background()); d != httpapi.DefaultMaxWaitForPosition {
		t.Fatalf("default bound %v", d)
	}
	var got time.Duration
	var waitErr error
	h := func(d time.Duration) http.Handler {
		return httpapi.WithMaxWait(d, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			got = httpapi.MaxWait(r.Context())
			waitErr = httpapi.WaitForPosition(r, func(ctx context.Context, _ uint64) error {
				<-ctx.Done() // a position never reached
				return ctx.Err()
			})
		}))
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set(httpapi.HeaderWaitForPosition, "99")
	h(time.Millisecond).ServeHTTP(httptest.NewRecorder(), r)
	var he *httpapi.Error
	if got != time.Millisecond || !errors.As(waitErr, &he) || he.Code != httpapi.CodeUnavailable {
		t.Fatalf("bound %v, wait error %v, want 1ms and unavailable", got, waitErr)
	}
	h(0).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if got != httpapi.DefaultMaxWaitForPosition {
		t.Fatalf("WithMaxWait(0): bound %v, want the default", got)
	}
}
