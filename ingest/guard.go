package ingest

import "net/http"

// Guard is the brute-force guard of the receivers that admit a caller by a
// shared token rather than a signature (the WhatsApp subscription verify
// token, provider callback tokens). auth.Authenticator serves it, so a
// wrong guess there counts in the same per-address counters as a wrong
// admin token.
type Guard interface {
	// CheckAttempt returns the 429 to answer when the client's address may
	// not try now (too many failures, or blocked), else nil. It is called
	// before the guess is looked at.
	CheckAttempt(r *http.Request) error
	// FailAttempt records a wrong guess and returns the error to answer:
	// answer, or the 429 when this failure was refused.
	FailAttempt(r *http.Request, answer error) error
}
