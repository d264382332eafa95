package attribution

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	attr "github.com/cgp-platform/cgp/attribution"
	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/readmodel"
)

// Queries reads the attribution read model.
type Queries struct{ db *sql.DB }

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

// Touchpoint is a row of the touchpoints read model.
type Touchpoint struct {
	ID, ShopID, CustomerID, AnonymousID string
	OccurredAt                          time.Time
	Kind, Channel, Source, Campaign     string
	LandingPath, ReferrerHost           string
	UTM                                 attr.UTM
	ClickIDKind                         string
}

const touchpointColumns = `touchpoint_id, shop_id, customer_id, anonymous_id, occurred_at, kind, channel, source, campaign,
	landing_path, referrer_host, utm_source, utm_medium, utm_campaign, utm_term, utm_content, click_id_kind`

func scanTouchpoint(s readmodel.Scanner) (Touchpoint, error) {
	var t Touchpoint
	var at int64
	err := s.Scan(&t.ID, &t.ShopID, &t.CustomerID, &t.AnonymousID, &at, &t.Kind, &t.Channel, &t.Source, &t.Campaign,
		&t.LandingPath, &t.ReferrerHost, &t.UTM.Source, &t.UTM.Medium, &t.UTM.Campaign, &t.UTM.Term, &t.UTM.Content, &t.ClickIDKind)
	t.OccurredAt = readmodel.Time(at)
	return t, err
}

// touchpoint rebuilds what attribution needs of a stored touchpoint: its
// class is recomputed from the landing kept (path, UTM, referrer host and
// the click id's kind).
func (t *Touchpoint) touchpoint() attr.Touchpoint {
	tp := attr.Touchpoint{ID: t.ID, ShopID: t.ShopID, CustomerID: t.CustomerID, AnonymousID: t.AnonymousID,
		OccurredAt: t.OccurredAt, Kind: attr.Kind(t.Kind)}
	tp.Path, tp.UTM, tp.ReferrerHost = t.LandingPath, t.UTM, t.ReferrerHost
	// The click id's value is not kept; a marker of its kind classifies
	// the same.
	switch t.ClickIDKind {
	case "gclid":
		tp.ClickIDs.GCLID = "1"
	case "gbraid":
		tp.ClickIDs.GBRAID = "1"
	case "wbraid":
		tp.ClickIDs.WBRAID = "1"
	case "fbclid":
		tp.ClickIDs.FBCLID = "1"
	case "ttclid":
		tp.ClickIDs.TTCLID = "1"
	case "msclkid":
		tp.ClickIDs.MSCLKID = "1"
	case "li_fat_id":
		tp.ClickIDs.LiFatID = "1"
	}
	return tp
}

// Credit is what a touchpoint earns of an order under one model; the
// synthetic direct touch of an order without touchpoints has no id.
type Credit struct {
	OrderID, Model, TouchpointID string
	Position                     int
	Channel, Source, Campaign    string
	Weight                       float64
	Revenue, Refunded            domain.Amount
}

// Record is an order with its credits under every model.
type Record struct {
	OrderID, ShopID, CustomerID string
	OrderedAt                   time.Time
	Revenue, Refunded           domain.Amount
	Currency                    string
	Version                     uint64
	// Credits are in model, then touchpoint order.
	Credits []Credit
}

// RecordKey is a position in the record list: ordered_at (Unix
// microseconds) and the order id.
type RecordKey struct {
	Value int64  `json:"v"`
	ID    string `json:"id"`
}

// RecordListQuery selects a page of a shop's attribution records.
type RecordListQuery struct {
	Shop string
	// From and Before bound ordered_at to [from, before); zero: open.
	From, Before time.Time
	// Channel keeps the orders with a touch of this channel ("" for
	// every order).
	Channel string
	Desc    bool
	After   *RecordKey
	Limit   int
}

// ListRecords returns up to Limit records after After sorted by
// ordered_at (ties by order id), with their credits (one more read for the
// page), and the key to continue from when there are more.
func (q *Queries) ListRecords(ctx context.Context, lq RecordListQuery) ([]Record, *RecordKey, error) {
	if lq.Limit < 1 {
		return nil, nil, domain.Invalid("limit", "limit must be positive")
	}
	where, args := []string{"shop_id = ?"}, []any{lq.Shop}
	if !lq.From.IsZero() {
		where, args = append(where, "ordered_at >= ?"), append(args, lq.From.UnixMicro())
	}
	if !lq.Before.IsZero() {
		where, args = append(where, "ordered_at < ?"), append(args, lq.Before.UnixMicro())
	}
	dir, cmp := "ASC", ">"
	if lq.Desc {
		dir, cmp = "DESC", "<"
	}
	if lq.Channel != "" {
		where = append(where, "EXISTS (SELECT 1 FROM attribution_credits c WHERE c.order_id = attribution_orders.order_id AND c.channel = ?)")
		args = append(args, lq.Channel)
	}
	if lq.After != nil {
		where, args = append(where, "(ordered_at, order_id) "+cmp+" (?, ?)"), append(args, lq.After.Value, lq.After.ID)
	}
	args = append(args, lq.Limit+1)
	out, err := readmodel.List(ctx, q.db, "attribution records", func(s readmodel.Scanner) (Record, error) {
		var r Record
		var at, rev, ref int64
		err := s.Scan(&r.OrderID, &r.ShopID, &r.CustomerID, &at, &rev, &ref, &r.Currency, &r.Version)
		r.OrderedAt, r.Revenue, r.Refunded = readmodel.Time(at), domain.Amount(rev), domain.Amount(ref)
		return r, err
	}, `SELECT order_id, shop_id, customer_id, ordered_at, revenue, refunded, currency, version FROM attribution_orders WHERE `+
		strings.Join(where, " AND ")+fmt.Sprintf(` ORDER BY ordered_at %s, order_id %s LIMIT ?`, dir, dir), args...)
	if err != nil {
		return nil, nil, err
	}
	var next *RecordKey
	if len(out) > lq.Limit {
		out = out[:lq.Limit]
		last := &out[len(out)-1]
		next = &RecordKey{Value: readmodel.Micros(last.OrderedAt), ID: last.OrderID}
	}
	if len(out) == 0 {
		return out, next, nil
	}
	ids := make([]string, len(out))
	byID := make(map[string]*Record, len(out))
	for i := range out {
		ids[i] = out[i].OrderID
		byID[ids[i]] = &out[i]
	}
	credits, err := readmodel.List(ctx, q.db, "attribution credits", scanCredit, `SELECT order_id, model, touchpoint_id, position,
		channel, source, campaign, weight, revenue, refunded FROM attribution_credits WHERE shop_id = ? AND order_id IN (`+
		placeholders(len(ids))+`)`, append([]any{lq.Shop}, toAny(ids)...)...)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range credits {
		r := byID[c.OrderID]
		r.Credits = append(r.Credits, c)
	}
	// Sorted here rather than by SQLite: a page holds thousands of
	// credits, and the index gives them by model and touchpoint id, not
	// position (a temporary b-tree of the whole result).
	for i := range out {
		slices.SortFunc(out[i].Credits, compareCredits)
	}
	return out, next, nil
}

// compareCredits orders an order's credits by model, then position.
func compareCredits(a, b Credit) int {
	return cmp.Or(strings.Compare(a.Model, b.Model), cmp.Compare(a.Position, b.Position))
}

func scanCredit(s readmodel.Scanner) (Credit, error) {
	var c Credit
	var rev, ref int64
	err := s.Scan(&c.OrderID, &c.Model, &c.TouchpointID, &c.Position, &c.Channel, &c.Source, &c.Campaign, &c.Weight, &rev, &ref)
	c.Revenue, c.Refunded = domain.Amount(rev), domain.Amount(ref)
	return c, err
}

// touchModel is the model whose credits OrderTouchpoints reads: linear
// gives every touch of an order a positive weight, so its credits name
// each touchpoint of the order exactly once (one row in six, no DISTINCT
// over every model's rows).
var touchModel = attr.Linear.String()

// OrderTouchpoints returns the stored touchpoints credited to each of the
// orders (one read), by order id, oldest first.
func (q *Queries) OrderTouchpoints(ctx context.Context, shop string, orderIDs []string) (map[string][]Touchpoint, error) {
	out := map[string][]Touchpoint{}
	if len(orderIDs) == 0 {
		return out, nil
	}
	type pair struct {
		order string
		tp    Touchpoint
	}
	cols := strings.Split(touchpointColumns, ",")
	for i, c := range cols {
		cols[i] = "t." + strings.TrimSpace(c)
	}
	rows, err := readmodel.List(ctx, q.db, "attribution touchpoints", func(s readmodel.Scanner) (pair, error) {
		var p pair
		var at int64
		t := &p.tp
		err := s.Scan(&p.order, &t.ID, &t.ShopID, &t.CustomerID, &t.AnonymousID, &at, &t.Kind, &t.Channel, &t.Source, &t.Campaign,
			&t.LandingPath, &t.ReferrerHost, &t.UTM.Source, &t.UTM.Medium, &t.UTM.Campaign, &t.UTM.Term, &t.UTM.Content, &t.ClickIDKind)
		t.OccurredAt = readmodel.Time(at)
		return p, err
	}, `SELECT c.order_id, `+strings.Join(cols, ", ")+` FROM attribution_credits c JOIN touchpoints t ON t.touchpoint_id = c.touchpoint_id
		WHERE c.order_id IN (`+placeholders(len(orderIDs))+`) AND c.model = ? AND c.shop_id = ? AND t.shop_id = c.shop_id
		ORDER BY c.order_id, t.occurred_at, t.touchpoint_id`, append(toAny(orderIDs), touchModel, shop)...)
	if err != nil {
		return nil, err
	}
	for _, p := range rows {
		out[p.order] = append(out[p.order], p.tp)
	}
	return out, nil
}

func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// SummaryRow is the sum of one group's credits under a model.
type SummaryRow struct {
	Key, Currency     string
	Orders            float64 // the sum of the weights: orders credited
	Revenue, Refunded domain.Amount
}

// summaryColumns are the group_by values of Summary and their columns.
var summaryColumns = map[string]string{"channel": "c.channel", "source": "c.source", "campaign": "c.campaign"}

// SummaryGroups are the group_by values Summary accepts.
func SummaryGroups() []string { return []string{"channel", "source", "campaign"} }

// Summary sums the credits of a shop's orders placed in [from, before)
// (zero times: open) under model, by channel, source or campaign and
// currency, largest revenue first; touches a model gives no weight are
// left out.
func (q *Queries) Summary(ctx context.Context, shop, model, groupBy string, from, before time.Time) ([]SummaryRow, error) {
	col := summaryColumns[groupBy]
	if col == "" {
		return nil, domain.Invalid("group_by", "unknown group")
	}
	where, args := []string{"o.shop_id = ?", "c.model = ?", "c.weight > 0"}, []any{shop, model}
	if !from.IsZero() {
		where, args = append(where, "o.ordered_at >= ?"), append(args, from.UnixMicro())
	}
	if !before.IsZero() {
		where, args = append(where, "o.ordered_at < ?"), append(args, before.UnixMicro())
	}
	return readmodel.List(ctx, q.db, "attribution summary", func(s readmodel.Scanner) (SummaryRow, error) {
		var r SummaryRow
		var rev, ref int64
		err := s.Scan(&r.Key, &r.Currency, &r.Orders, &rev, &ref)
		r.Revenue, r.Refunded = domain.Amount(rev), domain.Amount(ref)
		return r, err
	}, `SELECT `+col+`, o.currency, SUM(c.weight), SUM(c.revenue), SUM(c.refunded) FROM attribution_orders o
		JOIN attribution_credits c ON c.order_id = o.order_id WHERE `+strings.Join(where, " AND ")+`
		GROUP BY 1, 2 ORDER BY SUM(c.revenue) DESC, 1, 2`, args...)
}
