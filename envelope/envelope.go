package envelope

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/vault"
)

// formatV1 is the first byte of a payload sealed with the shop key.
const formatV1 byte = 1

// formatUnsealed is the first byte of the payload of an event type that
// implements domain.Unsealed: its JSON follows in clear, readable without
// any key (after the shop's key is shredded too).
const formatUnsealed byte = 2

// fieldPrefix starts a personal field sealed with a subject key:
// "pii1:<subject>:<base64url(nonce|ciphertext)>".
const fieldPrefix = "pii1:"

// ErrShopErased is returned by Decode when the shop's key was shredded: the
// event can no longer be read at all.
var ErrShopErased = errors.New("shop data erased")

// Codec encodes and decodes events. It is safe for concurrent use.
type Codec struct {
	events *domain.Catalogue
	keys   vault.Vault
}

// New returns a codec over a catalogue and a key vault (usually a
// vault.Cache in front of the store).
func New(events *domain.Catalogue, keys vault.Vault) *Codec {
	return &Codec{events: events, keys: keys}
}

// Catalogue returns the event catalogue.
func (c *Codec) Catalogue() *domain.Catalogue { return c.events }

// Encode seals ev as an event of shop. id is the event id (bound into the
// seal), occurredAt the time of the fact, meta the envelope metadata; the
// key ids used are added to meta.KeyIDs.
func (c *Codec) Encode(ctx context.Context, id uuid.UUID, shop string, ev domain.Event, occurredAt time.Time, meta eventlog.Metadata) (eventlog.EventData, error) {
	name := ev.EventType()
	version := c.events.Version(name)
	if version == 0 {
		return eventlog.EventData{}, fmt.Errorf("encode %s: %w", name, domain.ErrUnknownEventType)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return eventlog.EventData{}, fmt.Errorf("encode %s: %w", name, err)
	}
	if isUnsealed(ev) {
		if _, personal := ev.(domain.Personal); personal {
			return eventlog.EventData{}, fmt.Errorf("encode %s: an unsealed event type cannot carry personal data", name)
		}
		meta.KeyIDs = nil
		return eventlog.EventData{
			ID: id, Type: name, SchemaVersion: version, ShopID: shop,
			OccurredAt: occurredAt.UTC(), Data: append([]byte{formatUnsealed}, raw...), Metadata: meta,
		}, nil
	}
	keyIDs := []string{shopSubject(shop)}
	if p, ok := ev.(domain.Personal); ok {
		subject := p.Subject()
		if raw, err = c.sealFields(ctx, id, shop, subject, p.PersonalFields(), raw); err != nil {
			return eventlog.EventData{}, fmt.Errorf("encode %s: %w", name, err)
		}
		keyIDs = append(keyIDs, subject)
	}
	shopKey, err := c.keys.DataKey(ctx, tenant(shop), shopSubject(shop), true)
	if errors.Is(err, vault.ErrShredded) {
		// The shop was erased: nothing more is recorded about it, and the
		// caller is told the shop is not found (never a server error).
		return eventlog.EventData{}, fmt.Errorf("shop key: %w", erasedShop(err))
	}
	if err != nil {
		return eventlog.EventData{}, fmt.Errorf("shop key: %w", err)
	}
	sealed, err := seal(shopKey, raw, aad(id[:], []byte{formatV1}))
	if err != nil {
		return eventlog.EventData{}, err
	}
	data := append([]byte{formatV1}, sealed...)
	meta.KeyIDs = keyIDs
	return eventlog.EventData{
		ID: id, Type: name, SchemaVersion: version, ShopID: shop,
		OccurredAt: occurredAt.UTC(), Data: data, Metadata: meta,
	}, nil
}

// Decoded is a decoded event.
type Decoded struct {
	Event domain.Event
	// Redacted lists the personal fields whose subject key was shredded;
	// they decoded to null.
	Redacted []string
}

// Decode opens, un-seals and upcasts a recorded event. A shredded subject
// key never fails decoding: its fields become null and are listed in
// Redacted. A shredded shop key returns ErrShopErased.
func (c *Codec) Decode(ctx context.Context, e *eventlog.Event) (Decoded, error) {
	raw, err := c.Open(ctx, e)
	if err != nil {
		return Decoded{}, err
	}
	raw, redacted, err := c.openFields(ctx, e.ID, e.ShopID, raw)
	if err != nil {
		return Decoded{}, fmt.Errorf("decode %s %s: %w", e.Type, e.ID, err)
	}
	ev, err := c.events.Decode(e.Type, e.SchemaVersion, raw)
	if err != nil {
		return Decoded{}, err
	}
	return Decoded{Event: ev, Redacted: redacted}, nil
}

// Open removes the shop seal and returns the JSON with personal fields still
// sealed (what an auditor's export without subject keys would show).
func (c *Codec) Open(ctx context.Context, e *eventlog.Event) ([]byte, error) {
	if len(e.Data) > 0 && e.Data[0] == formatUnsealed {
		return c.openUnsealed(e)
	}
	if len(e.Data) == 0 || e.Data[0] != formatV1 {
		return nil, fmt.Errorf("decode %s %s: unknown payload format", e.Type, e.ID)
	}
	shopKey, err := c.keys.DataKey(ctx, tenant(e.ShopID), shopSubject(e.ShopID), false)
	if errors.Is(err, vault.ErrShredded) || errors.Is(err, vault.ErrNotFound) {
		return nil, fmt.Errorf("decode %s %s: %w", e.Type, e.ID, ErrShopErased)
	}
	if err != nil {
		return nil, fmt.Errorf("shop key: %w", err)
	}
	raw, err := open(shopKey, e.Data[1:], aad(e.ID[:], e.Data[:1]))
	if err != nil {
		return nil, fmt.Errorf("decode %s %s: %w", e.Type, e.ID, err)
	}
	return raw, nil
}

// platformTenant keys the events that belong to no shop (accounts).
const platformTenant = "platform"

// tenant returns the vault shop under which a shop's keys live.
func tenant(shop string) string {
	if shop == "" {
		return platformTenant
	}
	return shop
}

// shopSubject is the vault subject of a shop's own key.
func shopSubject(shop string) string { return tenant(shop) }

func (c *Codec) sealFields(ctx context.Context, id uuid.UUID, shop, subject string, fields []string, raw []byte) ([]byte, error) {
	spans, err := topLevelValues(raw, fields)
	if err != nil {
		return nil, err
	}
	var key []byte
	erased := false
	out := make([]byte, 0, len(raw)+128)
	last := 0
	for _, sp := range spans {
		v := raw[sp.start:sp.end]
		if bytes.Equal(v, []byte("null")) {
			continue
		}
		if key == nil && !erased {
			key, err = c.keys.DataKey(ctx, tenant(shop), subject, true)
			switch {
			case errors.Is(err, vault.ErrShredded):
				// The subject was erased: what arrives about it now is
				// not kept either.
				erased = true
			case err != nil:
				return nil, fmt.Errorf("subject key: %w", err)
			}
		}
		if erased {
			out = append(out, raw[last:sp.start]...)
			out = append(out, "null"...)
			last = sp.end
			continue
		}
		ct, err := seal(key, v, aad(id[:], []byte(sp.field)))
		if err != nil {
			return nil, err
		}
		out = append(out, raw[last:sp.start]...)
		out = append(out, '"')
		out = append(out, fieldPrefix...)
		out = append(out, subject...) // an id: [A-Za-z0-9_] only
		out = append(out, ':')
		out = base64.RawURLEncoding.AppendEncode(out, ct)
		out = append(out, '"')
		last = sp.end
	}
	return append(out, raw[last:]...), nil
}

// span is where a top-level member's value lies in a JSON object.
type span struct {
	field      string
	start, end int
}

// topLevelValues finds the values of the named top-level members of the
// JSON object raw (as json.Marshal writes it: compact, unique keys), in
// document order, without decoding the rest. Members nested deeper are not
// matched, whatever their names.
func topLevelValues(raw []byte, fields []string) ([]span, error) {
	bad := errors.New("malformed event JSON")
	if len(raw) < 2 || raw[0] != '{' {
		return nil, bad
	}
	var out []span
	i := 1
	for i < len(raw) && raw[i] != '}' {
		if raw[i] == ',' {
			i++
		}
		ks := i
		ke, err := skipString(raw, ks)
		if err != nil || ke >= len(raw) || raw[ke] != ':' {
			return nil, bad
		}
		vs := ke + 1
		ve, err := skipValue(raw, vs)
		if err != nil {
			return nil, bad
		}
		if name := raw[ks+1 : ke-1]; bytes.IndexByte(name, '\\') < 0 {
			for _, f := range fields {
				if string(name) == f {
					out = append(out, span{field: f, start: vs, end: ve})
				}
			}
		}
		i = ve
	}
	if i >= len(raw) {
		return nil, bad
	}
	return out, nil
}

// skipString returns the index just past the JSON string starting at i.
func skipString(raw []byte, i int) (int, error) {
	if i >= len(raw) || raw[i] != '"' {
		return 0, errors.New("not a string")
	}
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errors.New("unterminated string")
}

// skipValue returns the index just past the JSON value starting at i.
func skipValue(raw []byte, i int) (int, error) {
	if i >= len(raw) {
		return 0, errors.New("missing value")
	}
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				end, err := skipString(raw, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("unterminated value")
	default:
		j := i
		for j < len(raw) && raw[j] != ',' && raw[j] != '}' && raw[j] != ']' {
			j++
		}
		return j, nil
	}
}

// openFields replaces every sealed personal field of raw by its plain JSON
// value, or null when the subject's key is gone. It splices the document
// instead of decoding it: the payload was authenticated by the shop seal, so
// every `"<field>":"pii1:` in it was written by sealFields at the top level
// (inside a JSON string the quotes would be escaped and not match).
func (c *Codec) openFields(ctx context.Context, id uuid.UUID, shop string, raw []byte) ([]byte, []string, error) {
	pat := []byte(`":"` + fieldPrefix)
	if !bytes.Contains(raw, pat) {
		return raw, nil, nil
	}
	out := make([]byte, 0, len(raw))
	var redacted []string
	keys := map[string][]byte{}
	rest := raw
	for {
		i := bytes.Index(rest, pat)
		if i < 0 {
			return append(out, rest...), redacted, nil
		}
		ks := bytes.LastIndexByte(rest[:i], '"')
		vs := i + 2 // the value's opening quote
		ve := bytes.IndexByte(rest[vs+1:], '"')
		if ks < 0 || ve < 0 {
			return nil, nil, errors.New("malformed sealed field")
		}
		ve += vs + 1
		field := string(rest[ks+1 : i])
		subject, b64, ok := strings.Cut(string(rest[vs+1+len(fieldPrefix):ve]), ":")
		if !ok {
			return nil, nil, fmt.Errorf("field %s: malformed seal", field)
		}
		key, seen := keys[subject]
		if !seen {
			k, err := c.keys.DataKey(ctx, tenant(shop), subject, false)
			switch {
			case errors.Is(err, vault.ErrShredded) || errors.Is(err, vault.ErrNotFound):
				k = nil
			case err != nil:
				return nil, nil, fmt.Errorf("subject key: %w", err)
			}
			keys[subject], key = k, k
		}
		out = append(out, rest[:vs]...)
		if key == nil {
			out = append(out, "null"...)
			redacted = append(redacted, field)
		} else {
			ct, err := base64.RawURLEncoding.DecodeString(b64)
			if err != nil {
				return nil, nil, fmt.Errorf("field %s: %w", field, err)
			}
			plain, err := open(key, ct, aad(id[:], []byte(field)))
			if err != nil {
				return nil, nil, fmt.Errorf("field %s: %w", field, err)
			}
			out = append(out, plain...)
		}
		rest = rest[ve+1:]
	}
}

// seal returns nonce|ciphertext of plain under key, authenticated with ad.
func seal(key, plain, ad []byte) ([]byte, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, gcm.NonceSize(), gcm.NonceSize()+len(plain)+gcm.Overhead())
	if _, err := rand.Read(out); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return gcm.Seal(out, out[:gcm.NonceSize()], plain, ad), nil
}

// open reverses seal.
func open(key, sealed, ad []byte) ([]byte, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < gcm.NonceSize()+gcm.Overhead() {
		return nil, errors.New("sealed value too short")
	}
	nonce, ct := sealed[:gcm.NonceSize()], sealed[gcm.NonceSize():]
	plain, err := gcm.Open(nil, nonce, ct, ad)
	if err != nil {
		return nil, fmt.Errorf("open seal: %w", err)
	}
	return plain, nil
}

// aad binds a sealed value to its event id and label (format byte or field).
func aad(id, label []byte) []byte {
	out := make([]byte, 0, len(id)+1+len(label))
	out = append(out, id...)
	out = append(out, 0)
	return append(out, label...)
}

func newGCM(key []byte) (cipher.AEAD, error) {
	if len(key) != vault.KeySize {
		return nil, fmt.Errorf("data key has %d bytes, want %d", len(key), vault.KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// isUnsealed reports whether ev is stored without any key.
func isUnsealed(ev domain.Event) bool {
	u, ok := ev.(domain.Unsealed)
	return ok && u.Unsealed()
}

// openUnsealed returns the clear payload of an unsealed event, after
// checking that its type is one stored unsealed: a payload of any other
// type must be sealed, whatever its first byte says.
func (c *Codec) openUnsealed(e *eventlog.Event) ([]byte, error) {
	spec, ok := c.events.Spec(e.Type)
	if !ok {
		return nil, fmt.Errorf("decode %s %s: %w", e.Type, e.ID, domain.ErrUnknownEventType)
	}
	if !isUnsealed(spec.New()) {
		return nil, fmt.Errorf("decode %s %s: unsealed payload of a sealed event type", e.Type, e.ID)
	}
	return append([]byte(nil), e.Data[1:]...), nil
}

// erasedShop is the error of an attempt to seal an event of an erased
// shop: a not-found domain error that also matches ErrShopErased and the
// vault's cause.
func erasedShop(cause error) error {
	return &domain.Error{Code: domain.CodeNotFound, Message: "shop not found", Err: errors.Join(ErrShopErased, cause)}
}
