package writeapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/commands"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/images/engine/scene"
	"github.com/cgp-platform/cgp/images/engine/upscale"
	"github.com/cgp-platform/cgp/images/input"
	"github.com/cgp-platform/cgp/images/runner"
	"github.com/cgp-platform/cgp/images/store"
	"github.com/cgp-platform/cgp/projections/imageops"
	"github.com/cgp-platform/cgp/readapi"
)

// Credit headers of every image operation's answer.
const (
	HeaderCreditsCharged   = "X-Credits-Charged"
	HeaderCreditsRemaining = "X-Credits-Remaining"
)

// MaxImageWait bounds Prefer: wait on an image operation: with the upload
// it must fit in the server's 60 s write timeout, which runs from the end
// of the request's headers.
const MaxImageWait = 30 * time.Second

// ImagesConfig configures the image operations' writes.
type ImagesConfig struct {
	Commands *commands.Handler
	Auth     *auth.Authenticator
	Keys     auth.ImageKeyFinder
	// Idempotency is the Idempotency-Key middleware of the operations
	// (scoped per image-API key); nil: none.
	Idempotency func(http.Handler) http.Handler
	Queries     *imageops.Queries
	Store       store.Store
	// Input holds the size and pixel limits.
	Input input.Config
	// Provider says whether lifestyle scenes go to a scene provider.
	Provider bool
	// Unavailable, when set, says why an operation kind cannot run on this
	// server ("" when it can): such a request is refused with 503 before
	// any charge.
	Unavailable func(kind string) string
	// Wake wakes the workers; Changed is notified when an operation's
	// read model changes (Prefer: wait).
	Wake    func()
	Changed *runner.Signal
}

// Images serves POST /api/v1/images/background-removals, /upscales and
// /lifestyle-scenes.
type Images struct{ cfg ImagesConfig }

// NewImages returns the image operations' writes.
func NewImages(cfg ImagesConfig) *Images { return &Images{cfg: cfg} }

// ImagePaths are the operations' paths by kind.
var ImagePaths = map[string]string{
	domain.CreditKindBackgroundRemoval: "/api/v1/images/background-removals",
	domain.CreditKindUpscale:           "/api/v1/images/upscales",
	domain.CreditKindLifestyleScene:    "/api/v1/images/lifestyle-scenes",
}

// Routes registers the operations: images:write with an image-API key.
func (m *Images) Routes(r *mux.Router) {
	idem := m.cfg.Idempotency
	if idem == nil {
		idem = func(h http.Handler) http.Handler { return h }
	}
	for kind, path := range ImagePaths {
		r.Handle(path, httpapi.Beta(m.cfg.Auth.RequireImageKey(m.cfg.Keys, domain.ImageScopeImagesWrite,
			idem(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.handle(w, r, kind) }))))).Methods(http.MethodPost)
	}
}

// checkOptions validates an operation's options against the picture
// before anything is charged.
func (m *Images) checkOptions(kind string, img *input.Image) error {
	opts := img.Options
	switch kind {
	case domain.CreditKindBackgroundRemoval:
		for k := range opts {
			return domain.Invalid(input.OptionField(k), "unknown option: background removal takes none")
		}
	case domain.CreditKindUpscale:
		for k := range opts {
			if k != "scale" {
				return domain.Invalid(input.OptionField(k), "unknown option; the option is scale")
			}
		}
		switch opts["scale"] {
		case "":
			opts["scale"] = "2"
		case "2", "4":
		default:
			return domain.Invalid("scale", "the scale must be 2 or 4")
		}
		s, _ := strconv.Atoi(opts["scale"])
		if out := int64(img.Width) * int64(img.Height) * int64(s*s); out > upscale.DefaultMaxOutputPixels {
			return domain.Invalid("scale", "the upscaled picture would have %d pixels, more than the %d allowed: send a smaller picture or scale 2",
				out, upscale.DefaultMaxOutputPixels)
		}
	case domain.CreditKindLifestyleScene:
		return scene.CheckOptions(opts, m.cfg.Provider)
	}
	return nil
}

func (m *Images) handle(w http.ResponseWriter, r *http.Request, kind string) {
	key, _ := auth.ImageKeyFromContext(r.Context())
	wait, err := preferWait(r.Header)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	img, err := input.Parse(r, m.cfg.Input)
	if err == nil {
		err = m.checkOptions(kind, img)
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if m.cfg.Unavailable != nil {
		if why := m.cfg.Unavailable(kind); why != "" {
			e := httpapi.Unavailable(0)
			e.Message = why
			httpapi.WriteError(w, r, e)
			return
		}
	}
	id := domain.NewID(domain.PrefixImageOperation)
	// The input is stored before the request is recorded, so a worker
	// woken by the request always finds it; a refused request removes it.
	digest, size, err := m.cfg.Store.Put(r.Context(), key.ShopID, runner.InputKey(id), bytes.NewReader(img.Bytes))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	cost := domain.ImageOperationCost(kind, img.Options, m.cfg.Provider)
	req := domain.ImageOperationRequested{ShopID: key.ShopID, OperationID: id, Kind: kind, Options: img.Options, Credits: cost,
		KeyID: key.KeyID, Input: domain.ImageRef{Digest: digest, Size: size, Format: string(img.Format), Width: img.Width, Height: img.Height}}
	res, bal, err := m.cfg.Commands.RequestImageOperation(r.Context(), commands.RequestImageOperation{Request: req},
		commands.Meta{RequestID: httpapi.RequestID(r.Context()), Actor: key.KeyID, Source: "api"})
	if err != nil {
		// Nothing was recorded: the input goes (with a context of its own,
		// so a client that hung up leaves nothing behind).
		_ = m.cfg.Store.Delete(context.WithoutCancel(r.Context()), key.ShopID, runner.InputKey(id))
		w.Header().Set(HeaderCreditsCharged, "0")
		if sf := (*domain.CreditShortfall)(nil); errors.As(err, &sf) {
			w.Header().Set(HeaderCreditsRemaining, strconv.Itoa(sf.Remaining))
		}
		httpapi.WriteError(w, r, err)
		return
	}
	if m.cfg.Wake != nil {
		m.cfg.Wake()
	}
	op := &imageops.Operation{ID: id, ShopID: key.ShopID, Kind: kind, Status: domain.ImageStatusQueued, Options: img.Options,
		Credits: cost, Input: req.Input, KeyID: key.KeyID, RequestedAt: time.Now().UTC()}
	status := http.StatusAccepted
	if wait > 0 {
		w.Header().Set("Preference-Applied", "wait="+strconv.Itoa(int(wait/time.Second)))
		if done := m.waitFinished(r.Context(), key.ShopID, id, wait); done != nil {
			op, status = done, http.StatusOK
		}
	}
	charged := cost
	if op.Status == domain.ImageStatusFailed {
		charged = 0
	}
	remaining := bal.Remaining
	if charged == 0 {
		remaining += cost
	}
	w.Header().Set(HeaderCreditsCharged, strconv.Itoa(charged))
	w.Header().Set(HeaderCreditsRemaining, strconv.Itoa(remaining))
	w.Header().Set("Location", "/api/v1/images/"+id)
	w.Header().Set(readapi.HeaderPosition, strconv.FormatUint(res.Position, 10))
	httpapi.WriteResource(w, r, status, readapi.ImageResource(op))
}

// waitFinished waits up to d for the operation to succeed or fail in the
// read model and returns it then; nil when it is still running at the
// deadline (or the client went away).
func (m *Images) waitFinished(ctx context.Context, shop, id string, d time.Duration) *imageops.Operation {
	if m.cfg.Changed == nil {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		changed := m.cfg.Changed.C()
		if op, err := m.cfg.Queries.Get(ctx, shop, id); err == nil && op.Finished() {
			return op
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// preferWait reads the wait preference of RFC 7240 (Prefer: wait=N, N
// seconds), bounded by MaxImageWait; 0 without one. Other preferences are
// ignored, as the RFC asks; a malformed wait is 400 naming Prefer.
func preferWait(h http.Header) (time.Duration, error) {
	for _, v := range h.Values("Prefer") {
		for _, part := range strings.Split(v, ",") {
			for _, pref := range strings.Split(part, ";") {
				name, value, ok := strings.Cut(strings.TrimSpace(pref), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(name), "wait") {
					continue
				}
				n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(value), `"`))
				if err != nil || n < 0 || len(value) > 8 {
					return 0, httpapi.InvalidParameter("Prefer", "wait must be a whole number of seconds")
				}
				return min(time.Duration(n)*time.Second, MaxImageWait), nil
			}
		}
	}
	return 0, nil
}
