package readapi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/envelope"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/audit"
)

// ScopeAuditRead is the scope of the audit history reads.
const ScopeAuditRead = domain.ScopeAuditRead

// Names of the time-range filters of the audit history.
const (
	auditRecordedFrom   = "recorded_at][gte"
	auditRecordedBefore = "recorded_at][lt"
)

// AuditListSpec is the allow-list of GET /api/v1/audit-events. The time
// filters are filter[recorded_at][gte] and filter[recorded_at][lt] (RFC
// 3339 instants or dates, which mean midnight UTC).
var AuditListSpec = httpapi.ListSpec{Resource: "audit_events",
	Filters: map[string]httpapi.FilterKind{"stream": httpapi.StringFilter(), "resource_id": httpapi.StringFilter(),
		"type": httpapi.StringFilter(), "actor": httpapi.StringFilter(),
		auditRecordedFrom: httpapi.StringFilter(), auditRecordedBefore: httpapi.StringFilter()},
	Sorts: []string{"position"}, DefaultSort: "position"}

// Audit serves a shop's event history from the audit index and the log.
type Audit struct {
	q          *audit.Queries
	log        eventlog.Log
	codec      *envelope.Codec
	auth       *auth.Authenticator
	cursors    *httpapi.CursorCodec
	wait       Waiter
	checkpoint func() eventlog.Position
}

// NewAudit returns the audit history handlers; checkpoint reports how far
// the audit index has got.
func NewAudit(q *audit.Queries, log eventlog.Log, codec *envelope.Codec, a *auth.Authenticator, cursors *httpapi.CursorCodec,
	wait Waiter, checkpoint func() eventlog.Position) *Audit {
	return &Audit{q: q, log: log, codec: codec, auth: a, cursors: cursors, wait: wait, checkpoint: checkpoint}
}

// Routes registers the audit reads (beta).
func (a *Audit) Routes(r *mux.Router) {
	r.Handle("/api/v1/audit-events", httpapi.Beta(httpapi.Compressed(a.auth.Require(ScopeAuditRead, http.HandlerFunc(a.handleList))))).
		Methods(http.MethodGet)
	r.Handle("/api/v1/audit-events/verify", httpapi.Beta(a.auth.Require(ScopeAuditRead, http.HandlerFunc(a.handleVerify)))).
		Methods(http.MethodGet)
}

// auditKey is the position of an audit list cursor.
type auditKey struct {
	Position eventlog.Position `json:"p"`
}

// AuditQuery validates the list's query into an index query (the filters
// and sort; limit and cursor are ParseList's).
func AuditQuery(shop string, params httpapi.ListParams) (audit.Query, error) {
	q := audit.Query{Shop: shop, Stream: params.Filters["stream"], ResourceID: params.Filters["resource_id"],
		Type: params.Filters["type"], Actor: params.Filters["actor"], Desc: params.Sort.Desc, Limit: params.Limit}
	var err error
	if v, ok := params.Filters[auditRecordedFrom]; ok {
		if q.RecordedFrom, err = ParseInstant(v); err != nil {
			return q, httpapi.InvalidParameter("filter["+auditRecordedFrom+"]", err.Error())
		}
	}
	if v, ok := params.Filters[auditRecordedBefore]; ok {
		if q.RecordedBefore, err = ParseInstant(v); err != nil {
			return q, httpapi.InvalidParameter("filter["+auditRecordedBefore+"]", err.Error())
		}
		if !q.RecordedFrom.IsZero() && !q.RecordedBefore.After(q.RecordedFrom) {
			return q, httpapi.InvalidParameter("filter["+auditRecordedBefore+"]", "the end of the range must be after its start")
		}
	}
	return q, nil
}

// ParseInstant reads an RFC 3339 instant, or a date YYYY-MM-DD (midnight
// UTC), between the years 1970 and 9999.
func ParseInstant(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		d, derr := time.Parse(time.DateOnly, v)
		if derr != nil || d.Format(time.DateOnly) != v {
			return time.Time{}, errors.New("the value must be an RFC 3339 instant (2026-10-01T00:00:00Z) or a date YYYY-MM-DD")
		}
		t = d
	}
	if t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, errors.New("the value is out of range")
	}
	return t.UTC(), nil
}

func (a *Audit) handleList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	params, err := httpapi.ParseList(r, AuditListSpec, a.cursors)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	q, err := AuditQuery(p.ShopID, params)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	if params.Cursor != nil {
		var k auditKey
		if err := params.Cursor.Decode(&k); err != nil || k.Position == 0 {
			httpapi.WriteError(w, r, httpapi.InvalidCursor())
			return
		}
		q.After = k.Position
	}
	if err := WaitForPosition(r, a.wait, audit.Name); err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	entries, more, err := a.q.List(r.Context(), q)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	evs, err := ReadEntries(r.Context(), a.log, entries)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	items := make([]httpapi.Resource, 0, len(evs))
	for i := range evs {
		res, err := a.render(r.Context(), &evs[i])
		if errors.Is(err, envelope.ErrShopErased) {
			continue // the shop's data is gone for good
		}
		if err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
		items = append(items, res)
	}
	page := httpapi.Page{}
	if more && len(entries) > 0 {
		if page.NextCursor, err = a.cursors.Encode(params.Fingerprint, auditKey{Position: entries[len(entries)-1].Position}); err != nil {
			httpapi.WriteError(w, r, err)
			return
		}
	}
	httpapi.WriteList(w, r, items, page)
}

// ReadEntries fetches the events the index lists, in the entries' order:
// by position when the log can, else one stream read each. An entry whose
// event the log no longer holds is left out (verify names it).
func ReadEntries(ctx context.Context, log eventlog.Log, entries []audit.Entry) ([]eventlog.Event, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	var evs []eventlog.Event
	if pr, ok := log.(eventlog.PositionReader); ok {
		positions := make([]eventlog.Position, len(entries))
		for i, e := range entries {
			positions[i] = e.Position
		}
		found, err := pr.ReadPositions(ctx, positions)
		if err != nil {
			return nil, err
		}
		evs = found
	} else {
		for _, en := range entries {
			got, err := log.ReadStream(ctx, en.Stream, en.Revision, 1)
			if err != nil {
				return nil, err
			}
			if len(got) == 1 && got[0].Position == en.Position {
				evs = append(evs, got[0])
			}
		}
	}
	if len(entries) > 1 && entries[0].Position > entries[1].Position { // a descending page
		for i, j := 0, len(evs)-1; i < j; i, j = i+1, j-1 {
			evs[i], evs[j] = evs[j], evs[i]
		}
	}
	return evs, nil
}

// AuditEventAttributes is an entry of the audit history.
type AuditEventAttributes struct {
	Position      eventlog.Position `json:"position"`
	Stream        string            `json:"stream"`
	ResourceID    string            `json:"resource_id"`
	Revision      uint64            `json:"revision"`
	EventType     string            `json:"event_type"`
	SchemaVersion int               `json:"schema_version"`
	OccurredAt    time.Time         `json:"occurred_at"`
	RecordedAt    time.Time         `json:"recorded_at"`
	Actor         string            `json:"actor"`
	Source        string            `json:"source"`
	RequestID     string            `json:"request_id"`
	CausationID   string            `json:"causation_id"`
	PrevHash      *string           `json:"prev_hash"`
	Hash          string            `json:"hash"`
	Data          json.RawMessage   `json:"data"`
	Redacted      []string          `json:"redacted"`
}

func (a *Audit) render(ctx context.Context, e *eventlog.Event) (httpapi.Resource, error) {
	d, err := a.codec.Decode(ctx, e)
	if err != nil {
		return httpapi.Resource{}, err
	}
	data, err := json.Marshal(domain.Shown(d.Event)) // secrets read "[set]"
	if err != nil {
		return httpapi.Resource{}, err
	}
	var prev *string
	if len(e.PrevHash) > 0 {
		s := hex.EncodeToString(e.PrevHash)
		prev = &s
	}
	redacted := d.Redacted
	if redacted == nil {
		redacted = []string{}
	}
	return httpapi.Resource{ID: e.ID.String(), Type: "audit_event", Attributes: &AuditEventAttributes{
		Position: e.Position, Stream: e.StreamID, ResourceID: audit.ResourceID(e.StreamID), Revision: e.Revision,
		EventType: e.Type, SchemaVersion: e.SchemaVersion, OccurredAt: e.OccurredAt, RecordedAt: e.RecordedAt,
		Actor: e.Metadata.Actor, Source: e.Metadata.Source, RequestID: e.Metadata.CorrelationID,
		CausationID: e.Metadata.CausationID, PrevHash: prev, Hash: hex.EncodeToString(e.Hash), Data: data, Redacted: redacted,
	}}, nil
}

// verifyTimeout bounds the writing of a verification's answer.
const verifyTimeout = 30 * time.Minute

func (a *Audit) handleVerify(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	for key := range r.URL.Query() {
		httpapi.WriteError(w, r, httpapi.InvalidParameter(clipKey(key), "unknown query parameter"))
		return
	}
	// Verifying a very large shop may take longer than the server's write
	// timeout (about 5 s a million events): this answer may take up to
	// verifyTimeout. The client's going away still ends the work.
	if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(verifyTimeout)); err != nil {
		httpapi.Logger(r.Context()).Debug().Err(err).Msg("audit verify keeps the server's write timeout")
	}
	rep, err := audit.Verify(r.Context(), a.log, a.q, a.checkpoint(), p.ShopID)
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	httpapi.WriteResource(w, r, http.StatusOK, httpapi.Resource{ID: p.ShopID, Type: "audit_verification", Attributes: rep})
}
