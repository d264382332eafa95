package platform

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/platformapi"
)

// Error codes of the platform's failures, as the admin API answers them.
const (
	// CodeNotConnected (409): the shop has no usable platform session
	// (never installed through /auth/install, or the platform refused the
	// stored one): details.reauthorize_url.
	CodeNotConnected = "platform_not_connected"
	// CodeScopeMissing (403): the shop has not granted the platform scope
	// the operation needs: details.platform_scope, details.reauthorize_url.
	CodeScopeMissing = "platform_scope_missing"
	// CodeRejected (422): the platform refused the operation (its
	// userErrors): details.user_errors.
	CodeRejected = "platform_rejected"
	// CodeUnavailable (502): the platform failed or did not answer;
	// Retry-After when it is worth retrying.
	CodeUnavailable = "platform_unavailable"
)

// ReauthorizeURL is the link that takes a merchant through the install
// flow again (re-consent): {public}/auth/install?shop=DOMAIN.
func ReauthorizeURL(publicBase, shopDomain string) string {
	return publicBase + "/auth/install?" + url.Values{"shop": {shopDomain}}.Encode()
}

// NotConnected is the answer for a shop without a usable session.
func NotConnected(reauthorize string) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusConflict, Code: CodeNotConnected,
		Message: "the shop has no platform session: install the app through /auth/install",
		Details: map[string]any{"reauthorize_url": reauthorize}}
}

// ScopeMissing is the answer for an operation needing a platform scope the
// shop has not granted.
func ScopeMissing(scope, reauthorize string) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusForbidden, Code: CodeScopeMissing,
		Message: "the shop has not granted the platform scope " + scope + ": the merchant re-authorises the app to grant it",
		Details: map[string]any{"platform_scope": scope, "reauthorize_url": reauthorize}}
}

// HTTPError maps a platform call's failure to the admin API's answer:
// userErrors → 422 platform_rejected, a refused token → 409
// platform_not_connected, anything else from the platform → 502
// platform_unavailable (Retry-After when retryable). Other errors are
// returned as they are.
func HTTPError(err error, reauthorize string) error {
	if errors.Is(err, ErrNoSession) || errors.Is(err, ErrSessionRefused) || errors.Is(err, platformapi.ErrUnauthorized) {
		return NotConnected(reauthorize)
	}
	var pe *platformapi.Error
	if !errors.As(err, &pe) {
		return err
	}
	switch {
	case len(pe.UserErrors) > 0:
		ue := make([]map[string]any, 0, len(pe.UserErrors))
		for _, u := range pe.UserErrors {
			field := u.Field
			if field == nil {
				field = []string{}
			}
			ue = append(ue, map[string]any{"field": field, "message": u.Message})
		}
		return &httpapi.Error{Status: http.StatusUnprocessableEntity, Code: CodeRejected,
			Message: "the platform refused the operation: " + pe.UserErrors[0].Message, Details: map[string]any{"user_errors": ue}}
	case pe.Code == "ACCESS_DENIED" || pe.Status == http.StatusForbidden:
		return &httpapi.Error{Status: http.StatusForbidden, Code: CodeScopeMissing,
			Message: "the platform denied the operation to the app: the merchant re-authorises it",
			Details: map[string]any{"reauthorize_url": reauthorize}}
	}
	e := &httpapi.Error{Status: http.StatusBadGateway, Code: CodeUnavailable, Message: "the commerce platform failed the operation",
		Details: map[string]any{"platform_status": pe.Status, "platform_code": pe.Code}}
	if pe.Retryable {
		e.RetryAfter = max(pe.RetryAfter, httpapi.DefaultRetryAfter)
	}
	return e
}
