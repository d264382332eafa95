package readapi

import (
	"context"
	"github.com/cgp-platform/cgp/domain"
	"math"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/gorilla/mux"

	attr "github.com/cgp-platform/cgp/attribution"
	"github.com/cgp-platform/cgp/auth"
	"github.com/cgp-platform/cgp/httpapi"
	"github.com/cgp-platform/cgp/projections/attribution"
)

// ScopeAttributionRead is the scope of the attribution reads.
const ScopeAttributionRead = domain.ScopeAttributionRead

// AttributionListSpec is the allow-list of GET /api/v1/attribution (its
// include values are the relations').
var AttributionListSpec = httpapi.ListSpec{Resource: "attribution",
	Filters: map[string]httpapi.FilterKind{"date_from": httpapi.DateFilter(), "date_to": httpapi.DateFilter(),
		"channel": httpapi.EnumFilter(channelNames()...)},
	Sorts: []string{"ordered_at"}, DefaultSort: "-ordered_at"}

// channelNames are the values filter[channel] accepts.
func channelNames() []string {
	var out []string
	for _, c := range attr.Channels() {
		out = append(out, string(c))
	}
	return out
}

// Attribution serves the attribution records from the attribution read
// model.
type Attribution struct {
	q       *attribution.Queries
	summary AttributionSummarizer
	auth    *auth.Authenticator
	cursors *httpapi.CursorCodec
	wait    Waiter
}

// NewAttribution returns the attribution read handlers.
func NewAttribution(q *attribution.Queries, a *auth.Authenticator, cursors *httpapi.CursorCodec, wait Waiter) *Attribution {
	return &Attribution{q: q, summary: q, auth: a, cursors: cursors, wait: wait}
}

// Routes registers the attribution reads.
func (a *Attribution) Routes(r *mux.Router) {
	r.Handle("/api/v1/attribution", httpapi.Stable(httpapi.Compressed(a.auth.Require(ScopeAttributionRead, http.HandlerFunc(a.handleList))))).
		Methods(http.MethodGet)
	r.Handle("/api/v1/attribution/summary", httpapi.Beta(a.auth.Require(ScopeAttributionRead, http.HandlerFunc(a.handleSummary)))).
		Methods(http.MethodGet)
}

func (a *Attribution) handleList(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	ServeKeyset(w, r, a.cursors, a.wait, attribution.Name, AttributionListSpec,
		func(params httpapi.ListParams, after *attribution.RecordKey) ([]httpapi.Resource, *attribution.RecordKey, error) {
			q := attribution.RecordListQuery{Shop: p.ShopID, Channel: params.Filters["channel"], Desc: params.Sort.Desc, After: after,
				Limit: params.Limit}
			var err error
			if q.From, q.Before, err = dateRange(params); err != nil {
				return nil, nil, err
			}
			rows, next, err := a.q.ListRecords(r.Context(), q)
			items := make([]httpapi.Resource, len(rows))
			for i := range rows {
				items[i] = AttributionResource(&rows[i])
			}
			return items, next, err
		}, a.touchpointRelation(p.ShopID))
}

// dateRange reads filter[date_from] and filter[date_to] (inclusive days,
// UTC) as [from, before).
func dateRange(params httpapi.ListParams) (from, before time.Time, err error) {
	from, _ = params.FilterDate("date_from")
	if to, ok := params.FilterDate("date_to"); ok {
		if !from.IsZero() && to.Before(from) {
			return from, before, httpapi.InvalidParameter("filter[date_to]", "date_to is before date_from")
		}
		before = to.AddDate(0, 0, 1)
	}
	return from, before, nil
}

// touchpointRelation embeds the touchpoints credited to each record of the
// page (include=touchpoints), in one read.
func (a *Attribution) touchpointRelation(shop string) Relation {
	return Relation{
		Name: "touchpoints", ToMany: true,
		Key: func(res httpapi.Resource) string { return res.ID },
		Load: func(ctx context.Context, ids []string) (map[string][]httpapi.Resource, error) {
			found, err := a.q.OrderTouchpoints(ctx, shop, ids)
			if err != nil {
				return nil, err
			}
			out := make(map[string][]httpapi.Resource, len(found))
			for id, tps := range found {
				for i := range tps {
					out[id] = append(out[id], TouchpointResource(&tps[i]))
				}
			}
			return out, nil
		},
	}
}

// AttributionCredit is a touchpoint's credit under one model in the admin
// API; touchpoint_id is null for the direct touch an order without
// touchpoints is credited to.
type AttributionCredit struct {
	TouchpointID *string `json:"touchpoint_id"`
	Channel      string  `json:"channel"`
	Source       string  `json:"source"`
	Campaign     *string `json:"campaign"`
	Weight       float64 `json:"weight"`
	Revenue      float64 `json:"revenue"`
	Refunded     float64 `json:"refunded"`
}

// AttributionAttributes are an attribution record's attributes.
type AttributionAttributes struct {
	OrderID    string                         `json:"order_id"`
	CustomerID *string                        `json:"customer_id"`
	OrderedAt  time.Time                      `json:"ordered_at"`
	Revenue    float64                        `json:"revenue"`
	Refunded   float64                        `json:"refunded"`
	Currency   string                         `json:"currency"`
	Models     map[string][]AttributionCredit `json:"models"`
}

// AttributionResource renders an order's attribution record: every model,
// each with its credits in touchpoint order.
func AttributionResource(rec *attribution.Record) httpapi.Resource {
	attrs := AttributionAttributes{OrderID: rec.OrderID, CustomerID: emptyAsNull(rec.CustomerID), OrderedAt: rec.OrderedAt,
		Revenue: rec.Revenue.Float(), Refunded: rec.Refunded.Float(), Currency: rec.Currency,
		Models: make(map[string][]AttributionCredit, attr.NumModels)}
	for _, m := range attr.Models() {
		attrs.Models[m.String()] = []AttributionCredit{}
	}
	for _, c := range rec.Credits {
		attrs.Models[c.Model] = append(attrs.Models[c.Model], AttributionCredit{TouchpointID: emptyAsNull(c.TouchpointID),
			Channel: c.Channel, Source: c.Source, Campaign: emptyAsNull(c.Campaign), Weight: c.Weight,
			Revenue: c.Revenue.Float(), Refunded: c.Refunded.Float()})
	}
	day := rec.OrderedAt.UTC().Format(time.DateOnly)
	return httpapi.Resource{ID: rec.OrderID, Type: "attribution", Attributes: attrs,
		Relationships: map[string]httpapi.Relationship{
			"order": httpapi.RelatedLink("/api/v1/orders/" + rec.OrderID),
			"touchpoints": httpapi.RelatedLink("/api/v1/attribution?" + url.Values{"filter[date_from]": {day}, "filter[date_to]": {day},
				"include": {"touchpoints"}}.Encode()),
		}}
}

// TouchpointAttributes are a touchpoint's attributes: ids, time, kind,
// class and the landing's attribution parameters, nothing personal.
type TouchpointAttributes struct {
	CustomerID   *string   `json:"customer_id"`
	AnonymousID  *string   `json:"anonymous_id"`
	OccurredAt   time.Time `json:"occurred_at"`
	Kind         string    `json:"kind"`
	Channel      string    `json:"channel"`
	Source       string    `json:"source"`
	Campaign     *string   `json:"campaign"`
	LandingPath  *string   `json:"landing_path"`
	ReferrerHost *string   `json:"referrer_host"`
	UTMSource    *string   `json:"utm_source"`
	UTMMedium    *string   `json:"utm_medium"`
	UTMCampaign  *string   `json:"utm_campaign"`
	UTMTerm      *string   `json:"utm_term"`
	UTMContent   *string   `json:"utm_content"`
	ClickIDKind  *string   `json:"click_id_kind"`
}

// TouchpointResource renders a touchpoint.
func TouchpointResource(t *attribution.Touchpoint) httpapi.Resource {
	return httpapi.Resource{ID: t.ID, Type: "touchpoint", Attributes: TouchpointAttributes{
		CustomerID: emptyAsNull(t.CustomerID), AnonymousID: emptyAsNull(t.AnonymousID), OccurredAt: t.OccurredAt, Kind: t.Kind,
		Channel: t.Channel, Source: t.Source, Campaign: emptyAsNull(t.Campaign), LandingPath: emptyAsNull(t.LandingPath),
		ReferrerHost: emptyAsNull(t.ReferrerHost), UTMSource: emptyAsNull(t.UTM.Source), UTMMedium: emptyAsNull(t.UTM.Medium),
		UTMCampaign: emptyAsNull(t.UTM.Campaign), UTMTerm: emptyAsNull(t.UTM.Term), UTMContent: emptyAsNull(t.UTM.Content),
		ClickIDKind: emptyAsNull(t.ClickIDKind)}}
}

// summaryParams are the query parameters of the summary.
var summaryParams = []string{"filter[model]", "filter[date_from]", "filter[date_to]", "group_by"}

// AttributionSummarizer computes the attribution summary: the read model's
// queries, or a warehouse at scale.
type AttributionSummarizer interface {
	Summary(ctx context.Context, shop, model, groupBy string, from, before time.Time) ([]attribution.SummaryRow, error)
}

// WithSummary makes s compute the summary (the read model by default).
func (a *Attribution) WithSummary(s AttributionSummarizer) *Attribution {
	a.summary = s
	return a
}

// AttributionSummaryQuery is a validated summary request.
type AttributionSummaryQuery struct {
	Model, GroupBy, DateFrom, DateTo string
	From, Before                     time.Time
}

// ParseAttributionSummary validates the summary's query: filter[model]
// (required, one of the six models), group_by (channel by default, source
// or campaign), filter[date_from] and filter[date_to] (YYYY-MM-DD,
// inclusive, date_to not before date_from); anything else is a 400 naming
// the parameter.
func ParseAttributionSummary(query url.Values) (AttributionSummaryQuery, error) {
	var q AttributionSummaryQuery
	for name, vs := range query {
		if !slices.Contains(summaryParams, name) {
			return q, httpapi.InvalidParameter(name, "unknown parameter")
		}
		if len(vs) != 1 {
			return q, httpapi.InvalidParameter(name, "give the parameter once")
		}
	}
	q.Model = query.Get("filter[model]")
	if _, ok := attr.ParseModel(q.Model); !ok {
		return q, httpapi.InvalidParameter("filter[model]",
			"filter[model] is required: first_touch, last_touch, last_non_direct, linear, time_decay or position_based")
	}
	q.GroupBy = query.Get("group_by")
	if q.GroupBy == "" {
		q.GroupBy = "channel"
	}
	if !slices.Contains(attribution.SummaryGroups(), q.GroupBy) {
		return q, httpapi.InvalidParameter("group_by", "group_by must be channel, source or campaign")
	}
	for _, d := range []struct {
		name string
		dst  *time.Time
		raw  *string
	}{{"filter[date_from]", &q.From, &q.DateFrom}, {"filter[date_to]", &q.Before, &q.DateTo}} {
		v, ok := query[d.name]
		if !ok {
			continue
		}
		t, err := time.Parse(time.DateOnly, v[0])
		if err != nil {
			return q, httpapi.InvalidParameter(d.name, d.name+" must be a day (YYYY-MM-DD)")
		}
		*d.dst, *d.raw = t, v[0]
	}
	if !q.Before.IsZero() {
		if !q.From.IsZero() && q.Before.Before(q.From) {
			return q, httpapi.InvalidParameter("filter[date_to]", "date_to is before date_from")
		}
		q.Before = q.Before.AddDate(0, 0, 1)
	}
	return q, nil
}

// AttributionSummaryRow is one group of the summary.
type AttributionSummaryRow struct {
	Key      string  `json:"key"`
	Currency string  `json:"currency"`
	Orders   float64 `json:"orders"`
	Revenue  float64 `json:"revenue"`
	Refunded float64 `json:"refunded"`
	Net      float64 `json:"net"`
}

// AttributionSummaryAttributes are the summary's attributes.
type AttributionSummaryAttributes struct {
	Model    string                  `json:"model"`
	GroupBy  string                  `json:"group_by"`
	DateFrom *string                 `json:"date_from"`
	DateTo   *string                 `json:"date_to"`
	Rows     []AttributionSummaryRow `json:"rows"`
}

func (a *Attribution) handleSummary(w http.ResponseWriter, r *http.Request) {
	p, _ := auth.FromContext(r.Context())
	q, err := ParseAttributionSummary(r.URL.Query())
	if err == nil {
		err = WaitForPosition(r, a.wait, attribution.Name)
	}
	var rows []attribution.SummaryRow
	if err == nil {
		rows, err = a.summary.Summary(r.Context(), p.ShopID, q.Model, q.GroupBy, q.From, q.Before)
	}
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	attrs := AttributionSummaryAttributes{Model: q.Model, GroupBy: q.GroupBy, DateFrom: emptyAsNull(q.DateFrom),
		DateTo: emptyAsNull(q.DateTo), Rows: make([]AttributionSummaryRow, len(rows))}
	for i, row := range rows {
		attrs.Rows[i] = AttributionSummaryRow{Key: row.Key, Currency: row.Currency, Orders: math.Round(row.Orders*1e6) / 1e6,
			Revenue: row.Revenue.Float(), Refunded: row.Refunded.Float(), Net: (row.Revenue - row.Refunded).Float()}
	}
	id := q.Model + ":" + q.GroupBy + ":" + q.DateFrom + ":" + q.DateTo
	httpapi.WriteResource(w, r, http.StatusOK, httpapi.Resource{ID: id, Type: "attribution_summary", Attributes: attrs})
}
