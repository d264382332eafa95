package providers

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/ingest"
)

// Path is the route of provider callbacks (DESIGN.md §7).
const Path = "/webhooks/providers/{provider}"

// TokenParameter is the query parameter carrying the callback token.
const TokenParameter = "token"

// CodeInvalidCallbackToken is the error.code of a callback whose token is
// missing, unknown, rotated away or issued for another provider (403).
const CodeInvalidCallbackToken = "invalid_callback_token"

// Connection is a shop's connection to a provider, as the receiver needs
// it.
type Connection struct {
	ShopID    string
	Provider  string
	TokenHash string
}

// Connections finds provider connections.
type Connections interface {
	// ProviderByTokenHash returns the connection whose token's hex SHA-256
	// is hash, or an error whose domain code is not_found.
	ProviderByTokenHash(ctx context.Context, hash string) (*Connection, error)
}

// Recorder is the write side the receiver drives.
type Recorder interface {
	ingest.DeliveryRecorder
	RecordMessageStatus(ctx context.Context, cmd commands.RecordMessageStatus, meta commands.Meta) (commands.Result, error)
}

// Receiver receives provider callbacks.
type Receiver struct {
	conns   Connections
	rec     Recorder
	maxBody int64
	guard   ingest.Guard
}

// NewReceiver returns the receiver. maxBody <= 0 means
// ingest.DefaultMaxBody.
func NewReceiver(conns Connections, rec Recorder, maxBody int64) *Receiver {
	if maxBody <= 0 {
		maxBody = ingest.DefaultMaxBody
	}
	return &Receiver{conns: conns, rec: rec, maxBody: maxBody}
}

// WithGuard makes wrong callback tokens count as failed authentications
// of the client's address, and refuses an address the guard refuses
// before its token is looked at. It returns rc.
func (rc *Receiver) WithGuard(g ingest.Guard) *Receiver {
	rc.guard = g
	return rc
}

// Routes registers POST Path (beta: DESIGN.md adds the path shape).
func (rc *Receiver) Routes(r *mux.Router) {
	httpapi.HandleFunc(r, httpapi.Beta, http.MethodPost, Path, rc.handleCallback)
}

func invalidToken() *httpapi.Error {
	return &httpapi.Error{Status: http.StatusForbidden, Code: CodeInvalidCallbackToken,
		Message: "the callback token is missing or invalid"}
}

// errForbidden means the callback's token does not admit it.
var errForbidden = errors.New("provider callback token refused")

func (rc *Receiver) handleCallback(w http.ResponseWriter, r *http.Request) {
	if rc.guard != nil {
		if err := rc.guard.CheckAttempt(r); err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
	}
	provider := mux.Vars(r)["provider"]
	token := r.URL.Query().Get(TokenParameter)
	conn, err := rc.authenticate(r.Context(), provider, token)
	if errors.Is(err, errForbidden) {
		var answer error = invalidToken()
		if rc.guard != nil && token != "" {
			// A wrong token is a failed authentication; none is no guess.
			answer = rc.guard.FailAttempt(r, answer)
		}
		httpapi.WriteError(w, r, answer)
		return
	}
	if err != nil {
		ingest.Fail(w, r, err)
		return
	}
	body, ok := ingest.ReadBody(w, r, rc.maxBody)
	if !ok {
		return
	}
	sum := sha256.Sum256(body)
	meta := commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: "webhook:provider:" + provider + ":" + hex.EncodeToString(sum[:8]), Source: "webhook"}
	d := ingest.Delivery{Source: "provider:" + provider, ShopID: conn.ShopID, Topic: "statuses", Body: body, Meta: meta,
		EventID: eventlog.DeterministicID("provider", provider, conn.ShopID, hex.EncodeToString(sum[:]))}
	res, err := ingest.Process(r.Context(), rc.rec, d, func() (commands.Result, error) {
		return rc.mapCallback(r.Context(), conn, provider, body, meta)
	})
	if err != nil {
		ingest.Fail(w, r, err)
		return
	}
	ingest.Acknowledge(w, res)
}

// authenticate admits a callback whose token belongs to a connection of
// provider; anything else (no token, a malformed, unknown or rotated
// token, another provider's token) is errForbidden. It fails closed: a
// lookup error is returned as such (503), never admitted.
func (rc *Receiver) authenticate(ctx context.Context, provider, token string) (*Connection, error) {
	if !domain.ValidProviderName(provider) || !domain.ValidProviderToken(token) {
		return nil, errForbidden
	}
	hash := domain.HashToken(token)
	conn, err := rc.conns.ProviderByTokenHash(ctx, hash)
	if domain.ErrorCode(err) == domain.CodeNotFound {
		return nil, errForbidden
	}
	if err != nil {
		return nil, err
	}
	sameHash := subtle.ConstantTimeCompare([]byte(conn.TokenHash), []byte(hash)) == 1
	sameProvider := subtle.ConstantTimeCompare([]byte(conn.Provider), []byte(provider)) == 1
	if !sameHash || !sameProvider {
		return nil, errForbidden
	}
	return conn, nil
}

// mapCallback records every status of the callback. A status that does
// not fit is skipped and the callback recorded as unprocessable after the
// others; a log failure ends it at once.
func (rc *Receiver) mapCallback(ctx context.Context, conn *Connection, provider string, body []byte, meta commands.Meta) (commands.Result, error) {
	cb, err := Parse(provider, body)
	if err != nil {
		return commands.Result{}, err
	}
	if len(cb.Statuses) == 0 {
		return commands.Result{}, ingest.Ignore{Detail: "no statuses"}
	}
	var o ingest.Outcome
	for _, st := range cb.Statuses {
		if err := o.Add(rc.rec.RecordMessageStatus(ctx, commands.RecordMessageStatus{ShopID: conn.ShopID, Status: st}, meta)); err != nil {
			return commands.Result{}, err
		}
	}
	return o.Result()
}
