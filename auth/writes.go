package auth

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
)

// maxWrites bounds the credentials whose last write position is kept.
const maxWrites = 100_000

// writes remembers, per credential id, the highest log position a write of
// that credential reached on this server: the position its next request
// waits for (read-your-writes). It is bounded: when full, an arbitrary
// entry makes room; a credential whose entry went loses nothing but the
// implicit wait, and X-Wait-For-Position still serves it.
type writes struct {
	mu sync.Mutex
	m  map[string]uint64
}

func (w *writes) note(id string, pos uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]uint64{}
	}
	old, ok := w.m[id]
	if !ok && len(w.m) >= maxWrites {
		for k := range w.m {
			delete(w.m, k)
			break
		}
	}
	w.m[id] = max(old, pos)
}

func (w *writes) last(id string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[id]
}

// LastWrite returns the highest position a write of the credential id
// reached on this server (0: none remembered).
func (a *Authenticator) LastWrite(id string) uint64 { return a.writes.last(id) }

// settle runs, for an authenticated and admitted request of credential id,
// before its handler: it honours X-Wait-For-Position for the credentials
// read model (only now, after authentication: an unauthenticated request
// never waits), then waits until every read model that serves reads
// reached the position of the credential's last write on this server, so
// that a client reads its own writes without sending any header. Both
// waits are bounded by httpapi.MaxWait; running out is 503 unavailable.
func (a *Authenticator) settle(r *http.Request, id string) error {
	if err := httpapi.WaitForPosition(r, a.cfg.WaitFor); err != nil {
		return err
	}
	pos := a.writes.last(id)
	if pos == 0 || a.cfg.WaitReads == nil {
		return nil
	}
	return httpapi.WaitBounded(r.Context(), pos, a.cfg.WaitReads)
}

// recordWrites returns w noting the position of the write the handler
// answers (httpapi.HeaderEventPosition) as credential id's last write. It
// is noted when the answer's header is written, before any byte of it
// leaves, so the client's next request always finds it.
func (a *Authenticator) recordWrites(w http.ResponseWriter, id string) http.ResponseWriter {
	return &writeRecorder{ResponseWriter: w, writes: &a.writes, id: id}
}

type writeRecorder struct {
	http.ResponseWriter
	writes *writes
	id     string
	seen   bool
}

func (w *writeRecorder) noteHeader() {
	if w.seen {
		return
	}
	w.seen = true
	if v := w.Header().Get(httpapi.HeaderEventPosition); v != "" {
		if pos, err := strconv.ParseUint(v, 10, 64); err == nil && pos > 0 {
			w.writes.note(w.id, pos)
		}
	}
}

func (w *writeRecorder) WriteHeader(code int) {
	w.noteHeader()
	w.ResponseWriter.WriteHeader(code)
}

func (w *writeRecorder) Write(b []byte) (int, error) {
	w.noteHeader()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w *writeRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// catchUp is called for a credential unknown to the read model. When the
// credentials read model is behind the log's head (a token issued an
// instant ago, by this server or by another process writing the same log,
// may not be folded yet), it waits until the read model reached the head,
// bounded by httpapi.MaxWait. Either way it reports true: the caller looks
// the credential up once more, since the read model may have folded it
// between the lookup that missed and the read of its position (a read
// model found at the head is no proof that the miss saw that state). A
// wait that runs out reports false (the credential is refused and counted
// as a failure, so that a lagging read model never grants free guesses).
func (a *Authenticator) catchUp(ctx context.Context) (bool, error) {
	if a.cfg.Head == nil || a.cfg.Reached == nil || a.cfg.WaitFor == nil {
		return false, nil
	}
	head, err := a.cfg.Head(ctx)
	if err != nil {
		return false, err
	}
	if a.cfg.Reached() >= head {
		return true, nil
	}
	err = httpapi.WaitBounded(ctx, head, a.cfg.WaitFor)
	var he *httpapi.Error
	if errors.As(err, &he) && he.Code == httpapi.CodeUnavailable {
		return false, nil
	}
	return err == nil, err
}

// FindFresh calls find, and when it reports not found (domain code
// not_found), calls it once more after the credentials read model reached
// the log's head (waiting, bounded, only while it is behind): what find
// looks for (a token, a key, a shop and its webhook secret) may have been
// issued an instant ago, by this server or another process writing the
// same log.
func FindFresh[T any](ctx context.Context, a *Authenticator, find func() (T, error)) (T, error) {
	v, err := find()
	if domain.ErrorCode(err) != domain.CodeNotFound {
		return v, err
	}
	again, cerr := a.catchUp(ctx)
	if cerr != nil {
		return v, cerr
	}
	if again {
		return find()
	}
	return v, err
}
