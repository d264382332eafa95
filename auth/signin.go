package auth

import (
	"net/http"

	"github.com/cgp-platform/cgp/limits"
)

// Sign-ins of the admin interface (issue 22) count in the same
// brute-force guard as the API's credentials: a failed password is a
// failed authentication of the client address, and a blocked address is
// refused before any password is checked.

// SignInCheck refuses (a 429 *httpapi.Error) a blocked client address
// before a password is checked.
func (a *Authenticator) SignInCheck(r *http.Request) (limits.Verdict, error) { return a.guardCheck(r) }

// SignInFailed records a failed sign-in and returns answer, or the guard's
// 429 when this failure crossed a threshold.
func (a *Authenticator) SignInFailed(r *http.Request, answer error) error { return a.failed(r, answer) }

// SignInSucceeded resets the address's counters after a successful
// sign-in (v is SignInCheck's verdict).
func (a *Authenticator) SignInSucceeded(r *http.Request, v limits.Verdict) error {
	return a.succeeded(r, v)
}
