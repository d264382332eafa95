package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Default durations of the contract. Adapters take them as their defaults.
const (
	// DefaultWindow is how long a key stays bound to its first request and
	// its stored response: 24 hours, from the first request.
	DefaultWindow = 24 * time.Hour
	// DefaultLease is how long a claim in progress keeps other servers
	// away. It must exceed the longest time a write handler may run (the
	// server's write timeout); after it, the claim of a server that died
	// can be taken over.
	DefaultLease = 60 * time.Second
)

// Outcome is what Begin found for a key.
type Outcome int

// Outcomes of Begin.
const (
	// Started: the caller owns the key now and must end the claim with
	// Complete or Release.
	Started Outcome = iota + 1
	// Replay: a response is stored for this key and fingerprint;
	// Claim.Response holds it.
	Replay
	// Mismatch: the key is bound to another fingerprint within the window.
	Mismatch
	// InProgress: another request holds the key and its lease has not
	// passed.
	InProgress
)

// String names the outcome, for tests and logs.
func (o Outcome) String() string {
	switch o {
	case Started:
		return "started"
	case Replay:
		return "replay"
	case Mismatch:
		return "mismatch"
	case InProgress:
		return "in_progress"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Claim is the answer of Begin. For Started it is also the ticket that
// Complete and Release take back.
type Claim struct {
	// Outcome says what Begin found.
	Outcome Outcome
	// Scope, Key and Fingerprint are the arguments of Begin.
	Scope, Key, Fingerprint string
	// Token is the owner token of a Started claim, fresh and random for
	// every claim (a takeover gets a new one): Complete and Release act
	// only while it still owns the key. Empty for other outcomes.
	Token string
	// TakenOver reports, for Started, that the key was held by a claim
	// whose lease had passed: the request that held it may have done some
	// of its work before its server stopped.
	TakenOver bool
	// Response is the stored response, for Replay.
	Response Response
}

// Response is what is stored and replayed: the final status, the replayed
// headers only, and the body.
type Response struct {
	// Status is the HTTP status, 200 to 599.
	Status int
	// Header holds the headers to replay (canonical names).
	Header http.Header
	// Body is the response body, possibly empty.
	Body []byte
}

// Validate checks the status of r.
func (r Response) Validate() error {
	if r.Status < 200 || r.Status > 599 {
		return fmt.Errorf("%w: status %d is not a final status", ErrInvalid, r.Status)
	}
	return nil
}

// Store keeps idempotency records. Implementations are safe for concurrent
// use, by goroutines and by several servers sharing the backing store:
// Begin is one atomic claim, so for one (scope, key) at most one caller at a
// time holds a Started claim whose lease has not passed. Methods honour ctx
// (a cancelled ctx returns an error wrapping ctx.Err()) and never put the
// key, the scope or a body in an error message.
type Store interface {
	// Begin claims key within scope for a request with fingerprint. With
	// no live record for the key (none, released, or older than the
	// window) it records a claim and answers Started. Otherwise it answers
	// Mismatch when the record has another fingerprint, Replay with the
	// stored response when it has one, InProgress while the holder's lease
	// lasts, and Started (TakenOver) once the lease has passed. A Started
	// claim is durable before Begin returns. Invalid arguments (see
	// CheckBegin) return an error wrapping ErrInvalid.
	Begin(ctx context.Context, scope, key, fingerprint string) (Claim, error)
	// Complete stores resp for a Started claim, durably before it returns,
	// and ends the claim: later Begins with the same fingerprint replay
	// resp until the window passes. It returns ErrClaimLost when the claim
	// no longer owns the key (its lease passed and it was taken over, the
	// record expired, or the claim was already completed or released).
	Complete(ctx context.Context, c Claim, resp Response) error
	// Release forgets a Started claim, so that the key can be used again at
	// once, with any request. It returns ErrClaimLost when the claim no
	// longer owns the key; a stored response is never released.
	Release(ctx context.Context, c Claim) error
}

// ErrClaimLost is returned by Complete and Release for a claim that no
// longer owns its key.
var ErrClaimLost = errors.New("idempotency claim lost")

// ErrInvalid is wrapped by the errors of Begin and Complete for arguments
// that break the contract (empty scope or key, status out of range).
var ErrInvalid = errors.New("invalid idempotency argument")

// MaxScopeLength bounds the scope in bytes.
const MaxScopeLength = 255

// CheckBegin validates the arguments of Begin; adapters call it first. The
// key must be a valid key (ValidateKey); the scope and the fingerprint must
// be non-empty and at most MaxScopeLength bytes.
func CheckBegin(scope, key, fingerprint string) error {
	var errs []error
	if scope == "" || len(scope) > MaxScopeLength {
		errs = append(errs, errors.New("scope must have 1 to 255 bytes"))
	}
	if err := ValidateKey(key); err != nil {
		errs = append(errs, err)
	}
	if fingerprint == "" || len(fingerprint) > MaxScopeLength {
		errs = append(errs, errors.New("fingerprint must have 1 to 255 bytes"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
	}
	return nil
}

// CheckEnd validates a claim given to Complete or Release: it must be a
// Started claim with its token. A claim that never was Started cannot own a
// key, so the error is ErrClaimLost.
func CheckEnd(c Claim) error {
	if c.Outcome != Started || c.Token == "" || c.Scope == "" || c.Key == "" {
		return ErrClaimLost
	}
	return nil
}

// Fingerprint identifies a request for the idempotency contract: the hex
// SHA-256 of the method, the request target (path and query, as sent) and
// the SHA-256 of the raw body. Length-prefixed parts make it unambiguous.
func Fingerprint(method, target string, body []byte) string {
	bodySum := sha256.Sum256(body)
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s\n%d:%s\n", len(method), method, len(target), target)
	h.Write(bodySum[:])
	return hex.EncodeToString(h.Sum(nil))
}

// Forgetter is implemented by stores that can delete the stored responses
// mentioning an erased data subject (GDPR erasure): Forget deletes every
// stored response whose body contains one of needles.
type Forgetter interface {
	Forget(ctx context.Context, needles ...string) (int64, error)
}
