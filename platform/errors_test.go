package platform_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/platform"
	"github.com/cgp-platform/cgp/platformapi"
)

func TestHTTPErrorMapsThePlatformsFailures(t *testing.T) {
	const link = "https://cgp.example.com/auth/install?shop=a.myshopify.com"
	cases := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"no session", platform.ErrNoSession, http.StatusConflict, platform.CodeNotConnected},
		{"refresh refused", fmt.Errorf("%w: x", platform.ErrSessionRefused), http.StatusConflict, platform.CodeNotConnected},
		{"user errors", platformapi.UserErrors([]platformapi.UserError{{Field: []string{"orderId"}, Message: "Order is already cancelled"}}),
			http.StatusUnprocessableEntity, platform.CodeRejected},
		{"token refused", fmt.Errorf("call: %w", platformapi.ErrUnauthorized), http.StatusConflict, platform.CodeNotConnected},
		{"access denied", &platformapi.Error{Status: 200, Code: "ACCESS_DENIED"}, http.StatusForbidden, platform.CodeScopeMissing},
		{"throttled", &platformapi.Error{Status: 200, Code: "THROTTLED", Retryable: true}, http.StatusBadGateway, platform.CodeUnavailable},
		{"5xx", &platformapi.Error{Status: 503, Retryable: true, RetryAfter: 30 * time.Second}, http.StatusBadGateway, platform.CodeUnavailable},
	}
	for _, tc := range cases {
		var he *httpapi.Error
		if !errors.As(platform.HTTPError(tc.err, link), &he) || he.Status != tc.status || he.Code != tc.code {
			t.Errorf("%s: %v, want %d %s", tc.name, platform.HTTPError(tc.err, link), tc.status, tc.code)
		}
	}
	var he *httpapi.Error
	errors.As(platform.HTTPError(&platformapi.Error{Status: 503, Retryable: true, RetryAfter: 30 * time.Second}, link), &he)
	if he.RetryAfter != 30*time.Second {
		t.Errorf("Retry-After %v", he.RetryAfter)
	}
	plain := errors.New("disk full")
	if platform.HTTPError(plain, link) != plain {
		t.Error("a failure of ours was dressed as the platform's")
	}
}
