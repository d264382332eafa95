package whatsapp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/ingest"
)

// Path is the messaging platform's webhook path (DESIGN.md §7).
const Path = "/webhooks/whatsapp"

// Source names the platform in recorded deliveries and statuses.
const Source = "whatsapp"

// CodeVerificationFailed is the error.code of a refused subscription
// handshake (403).
const CodeVerificationFailed = "verification_failed"

// MaxChallenge bounds the hub.challenge echoed back.
const MaxChallenge = 256

// Account is a connected business account as the receiver needs it.
type Account struct {
	ID              string
	ShopID          string
	AppSecret       string
	VerifyTokenHash string
}

// Accounts finds connected business accounts. Both methods return an
// error whose domain code is not_found when there is no such account.
type Accounts interface {
	WhatsAppAccount(ctx context.Context, businessAccountID string) (*Account, error)
	// AccountByVerifyTokenHash finds an account whose verify token's hex
	// SHA-256 is hash.
	AccountByVerifyTokenHash(ctx context.Context, hash string) (*Account, error)
}

// Recorder is the write side the receiver drives.
type Recorder interface {
	ingest.DeliveryRecorder
	ReceiveWhatsAppMessage(ctx context.Context, cmd commands.ReceiveWhatsAppMessage, meta commands.Meta) (commands.Result, error)
	RecordMessageStatus(ctx context.Context, cmd commands.RecordMessageStatus, meta commands.Meta) (commands.Result, error)
	RecordTemplateStatus(ctx context.Context, cmd commands.RecordTemplateStatus, meta commands.Meta) (commands.Result, error)
	RecordPhoneQuality(ctx context.Context, cmd commands.RecordPhoneQuality, meta commands.Meta) (commands.Result, error)
	RecordAccountAlert(ctx context.Context, cmd commands.RecordAccountAlert, meta commands.Meta) (commands.Result, error)
	RecordAccountReview(ctx context.Context, cmd commands.RecordAccountReview, meta commands.Meta) (commands.Result, error)
}

// Receiver receives the messaging platform's webhooks.
type Receiver struct {
	accounts Accounts
	rec      Recorder
	maxBody  int64
	guard    ingest.Guard
}

// NewReceiver returns the receiver. maxBody <= 0 means
// ingest.DefaultMaxBody.
func NewReceiver(accounts Accounts, rec Recorder, maxBody int64) *Receiver {
	if maxBody <= 0 {
		maxBody = ingest.DefaultMaxBody
	}
	return &Receiver{accounts: accounts, rec: rec, maxBody: maxBody}
}

// WithGuard makes wrong verify tokens count as failed authentications of
// the client's address, and refuses an address the guard refuses before
// its token is looked at. It returns rc.
func (rc *Receiver) WithGuard(g ingest.Guard) *Receiver {
	rc.guard = g
	return rc
}

// Routes registers GET (handshake) and POST (notifications) on Path.
func (rc *Receiver) Routes(r *mux.Router) {
	httpapi.HandleFunc(r, httpapi.Stable, http.MethodGet, Path, rc.handleVerify)
	httpapi.HandleFunc(r, httpapi.Stable, http.MethodPost, Path, rc.handleNotification)
}

func verificationFailed() *httpapi.Error {
	return &httpapi.Error{Status: http.StatusForbidden, Code: CodeVerificationFailed,
		Message: "the subscription verification failed"}
}

// handleVerify answers the subscription handshake: hub.mode=subscribe and
// the verify token of a connected account echo hub.challenge; anything else
// is 403. A wrong verify token is a failed authentication (429 once the
// guard refuses the address); a handshake without a token guesses nothing
// and is not counted.
func (rc *Receiver) handleVerify(w http.ResponseWriter, r *http.Request) {
	if rc.guard != nil {
		if err := rc.guard.CheckAttempt(r); err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
	}
	q := r.URL.Query()
	mode, token, challenge := q.Get("hub.mode"), q.Get("hub.verify_token"), q.Get("hub.challenge")
	if mode != "subscribe" || token == "" || !SafeChallenge(challenge) {
		httpapi.WriteError(w, r, verificationFailed())
		return
	}
	if len(token) > 256 {
		httpapi.WriteError(w, r, rc.failed(r))
		return
	}
	hash := domain.HashToken(token)
	acc, err := rc.accounts.AccountByVerifyTokenHash(r.Context(), hash)
	if err != nil && domain.ErrorCode(err) != domain.CodeNotFound {
		ingest.Fail(w, r, err)
		return
	}
	if acc == nil || subtle.ConstantTimeCompare([]byte(acc.VerifyTokenHash), []byte(hash)) != 1 {
		httpapi.WriteError(w, r, rc.failed(r))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, challenge)
}

// failed counts a wrong verify token and returns the error to answer.
func (rc *Receiver) failed(r *http.Request) error {
	if rc.guard == nil {
		return verificationFailed()
	}
	return rc.guard.FailAttempt(r, verificationFailed())
}

// SafeChallenge reports whether a challenge may be echoed: 1 to
// MaxChallenge visible ASCII characters (the platform sends digits).
func SafeChallenge(s string) bool {
	if s == "" || len(s) > MaxChallenge {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// errUnauthenticated means the body's sender could not be authenticated:
// no account named, an unknown account, or a signature that does not
// verify with each named account's app secret.
var errUnauthenticated = errors.New("whatsapp delivery not authenticated")

func (rc *Receiver) handleNotification(w http.ResponseWriter, r *http.Request) {
	body, ok := ingest.ReadBody(w, r, rc.maxBody)
	if !ok {
		return
	}
	sig := r.Header.Get(HeaderSignature)
	if sig == "" {
		httpapi.WriteError(w, r, httpapi.SignatureRequired(HeaderSignature))
		return
	}
	ctx := r.Context()
	ids := AccountIDs(body)
	shops, err := rc.authenticate(ctx, ids, body, sig)
	if err == nil {
		var res commands.Result
		if res, err = rc.process(ctx, body, ids, shops); err == nil {
			ingest.Acknowledge(w, res)
			return
		}
	}
	if errors.Is(err, errUnauthenticated) {
		// An unknown account and a wrong signature get the same answer,
		// so the endpoint does not reveal which accounts are connected.
		httpapi.WriteError(w, r, httpapi.InvalidSignature())
		return
	}
	ingest.Fail(w, r, err)
}

// authenticate looks up every account ids names and verifies sig with
// each one's app secret. It returns the shop of each account.
func (rc *Receiver) authenticate(ctx context.Context, ids []string, body []byte, sig string) (map[string]string, error) {
	if len(ids) == 0 || len(ids) > MaxAccounts {
		return nil, errUnauthenticated
	}
	shops := make(map[string]string, len(ids))
	for _, id := range ids {
		if !domain.ValidMetaID(id) {
			return nil, errUnauthenticated
		}
		acc, err := rc.accounts.WhatsAppAccount(ctx, id)
		if domain.ErrorCode(err) == domain.CodeNotFound {
			return nil, errUnauthenticated
		}
		if err != nil {
			return nil, err
		}
		if !Verify([]byte(acc.AppSecret), body, sig) {
			return nil, errUnauthenticated
		}
		shops[id] = acc.ShopID
	}
	return shops, nil
}

// process turns a verified body into commands: each entry is a delivery of
// its account's shop (its changes mapped, or the entry recorded), and a
// body that does not parse is recorded for the shop of the first account
// it names.
func (rc *Receiver) process(ctx context.Context, body []byte, ids []string, shops map[string]string) (commands.Result, error) {
	sum := sha256.Sum256(body)
	meta := commands.Meta{RequestID: httpapi.RequestID(ctx), Actor: "webhook:whatsapp:" + hex.EncodeToString(sum[:8]), Source: "webhook"}
	n, parseErr := Parse(body)
	if parseErr != nil {
		shop := shops[ids[0]]
		d := ingest.Delivery{Source: Source, ShopID: shop, Topic: "unparsed", Body: body, Meta: meta,
			EventID: eventlog.DeterministicID(Source, shop, hex.EncodeToString(sum[:]))}
		return ingest.Process(ctx, rc.rec, d, func() (commands.Result, error) { return commands.Result{}, parseErr })
	}
	// encoding/json may read an entry id the token scan did not collect
	// (keys matched with Unicode folding); such an entry is not trusted.
	for _, e := range n.Entries {
		if _, ok := shops[e.ID]; !ok {
			return commands.Result{}, errUnauthenticated
		}
	}
	var last commands.Result
	for _, e := range n.Entries {
		shop := shops[e.ID]
		esum := sha256.Sum256(e.Raw)
		d := ingest.Delivery{Source: Source, ShopID: shop, Topic: topic(e), Body: e.Raw, TriggeredAt: e.Time, Meta: meta,
			EventID: eventlog.DeterministicID(Source, shop, hex.EncodeToString(esum[:]))}
		res, err := ingest.Process(ctx, rc.rec, d, func() (commands.Result, error) { return rc.mapEntry(ctx, shop, e, meta) })
		if err != nil {
			return commands.Result{}, err
		}
		if res.Position > last.Position {
			last = res
		}
	}
	return last, nil
}

// topic lists an entry's distinct change fields.
func topic(e Entry) string {
	seen := map[string]bool{}
	var fields []string
	for _, c := range e.Changes {
		if !seen[c.Field] {
			seen[c.Field] = true
			fields = append(fields, c.Field)
		}
	}
	sort.Strings(fields)
	t := strings.Join(fields, ",")
	if len(t) > 100 {
		t = t[:100]
	}
	return t
}

// mapEntry maps every change of an entry.
func (rc *Receiver) mapEntry(ctx context.Context, shop string, e Entry, meta commands.Meta) (commands.Result, error) {
	if len(e.Changes) == 0 {
		return commands.Result{}, ingest.Ignore{Detail: "entry without changes"}
	}
	var o ingest.Outcome
	for _, c := range e.Changes {
		if err := rc.mapChange(ctx, shop, e, c, meta, &o); err != nil {
			return commands.Result{}, err
		}
	}
	return o.Result()
}

// mapChange runs the commands of one change, adding their results to o.
func (rc *Receiver) mapChange(ctx context.Context, shop string, e Entry, c Change, meta commands.Meta, o *ingest.Outcome) error {
	switch c.Field {
	case FieldMessages:
		m, err := ParseMessages(e.ID, c.Value)
		if err != nil {
			return o.Add(commands.Result{}, err)
		}
		if len(m.Messages) == 0 && len(m.Statuses) == 0 {
			// e.g. a value with errors[] only: kept as a delivery.
			return o.Add(commands.Result{}, ingest.ErrUnhandled)
		}
		for _, msg := range m.Messages {
			if err := o.Add(rc.rec.ReceiveWhatsAppMessage(ctx, commands.ReceiveWhatsAppMessage{ShopID: shop, Message: msg}, meta)); err != nil {
				return err
			}
		}
		for _, st := range m.Statuses {
			if err := o.Add(rc.rec.RecordMessageStatus(ctx, commands.RecordMessageStatus{ShopID: shop, Status: st}, meta)); err != nil {
				return err
			}
		}
		return nil
	case FieldTemplateStatus:
		ts, err := ParseTemplateStatus(e.ID, e.Time, c.Value)
		if err != nil {
			return o.Add(commands.Result{}, err)
		}
		return o.Add(rc.rec.RecordTemplateStatus(ctx, commands.RecordTemplateStatus{ShopID: shop, Status: ts}, meta))
	case FieldQuality:
		q, err := ParseQualityUpdate(e.ID, e.Time, c.Value)
		if err != nil {
			return o.Add(commands.Result{}, err)
		}
		return o.Add(rc.rec.RecordPhoneQuality(ctx, commands.RecordPhoneQuality{ShopID: shop, Quality: q}, meta))
	case FieldAccountAlerts:
		a, err := ParseAccountAlert(e.ID, e.Time, c.Value)
		if err != nil {
			return o.Add(commands.Result{}, err)
		}
		return o.Add(rc.rec.RecordAccountAlert(ctx, commands.RecordAccountAlert{ShopID: shop, Alert: a}, meta))
	case FieldAccountReview:
		decision, err := ParseAccountReview(c.Value)
		if err != nil {
			return o.Add(commands.Result{}, err)
		}
		return o.Add(rc.rec.RecordAccountReview(ctx, commands.RecordAccountReview{ShopID: shop, BusinessAccountID: e.ID,
			Decision: decision, At: e.Time}, meta))
	}
	return o.Add(commands.Result{}, ingest.ErrUnhandled)
}
