package customers

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// Customer is a row of the read model.
type Customer struct {
	ID               string
	ShopID           string
	ExternalID       string
	Email            *string
	FirstName        *string
	LastName         *string
	Phone            *string
	AcceptsMarketing bool
	State            string
	Currency         string
	OrdersCount      int
	TotalSpent       domain.Amount
	LastOrderAt      time.Time // zero when unknown
	Tags             []string
	PlatformTags     []string
	CreatedAt        time.Time
	UpdatedAt        time.Time
	Redacted         bool
	Version          uint64
}

// Queries reads the customers read model.
type Queries struct {
	db *sql.DB
}

// NewQueries returns queries over the read-model store's read pool.
func NewQueries(db *sql.DB) *Queries { return &Queries{db: db} }

const columns = `customer_id, shop_id, external_id, email, first_name, last_name, phone,
	accepts_marketing, state, currency, orders_count, total_spent, last_order_at, tags, platform_tags,
	created_at, updated_at, redacted, version`

// Get returns a customer of a shop; a customer of another shop is not
// found.
func (q *Queries) Get(ctx context.Context, shop, id string) (*Customer, error) {
	row := q.db.QueryRowContext(ctx, `SELECT `+columns+` FROM customers WHERE customer_id = ? AND shop_id = ?`, id, shop)
	c, err := scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, domain.NotFound("customer")
	}
	return c, err
}

// Sort keys of the customer list.
const (
	SortCreatedAt   = "created_at"
	SortLastOrderAt = "last_order_at"
	SortTotalSpent  = "total_spent"
)

// Key is a position in a sorted list: the sort column's value and the id.
type Key struct {
	Value int64  `json:"v"`
	ID    string `json:"id"`
}

// ListQuery selects a page of customers.
type ListQuery struct {
	Shop  string
	Stage string // "" for any lifecycle stage
	Sort  string // one of the Sort constants
	Desc  bool
	After *Key // nil for the first page
	Limit int
	Now   time.Time // the instant lifecycle stages are computed at
}

// List returns up to Limit customers after After in the query's order, and
// the key to continue from when there are more.
func (q *Queries) List(ctx context.Context, lq ListQuery) ([]Customer, *Key, error) {
	query, args, err := listSQL(lq)
	if err != nil {
		return nil, nil, err
	}
	rows, err := q.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("list customers: %w", err)
	}
	defer rows.Close()
	out := make([]Customer, 0, lq.Limit)
	for rows.Next() {
		c, err := scan(rows)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, *c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("list customers: %w", err)
	}
	if len(out) <= lq.Limit {
		return out, nil, nil
	}
	out = out[:lq.Limit]
	last := out[len(out)-1]
	return out, &Key{Value: sortValue(&last, lq.Sort), ID: last.ID}, nil
}

// listSQL is the query of a list page and its arguments.
func listSQL(lq ListQuery) (string, []any, error) {
	col := map[string]string{SortCreatedAt: "created_at", SortLastOrderAt: "last_order_at", SortTotalSpent: "total_spent"}[lq.Sort]
	if col == "" {
		return "", nil, domain.Invalid("sort", "unknown sort field")
	}
	var where strings.Builder
	args := []any{lq.Shop}
	where.WriteString("shop_id = ?")
	if lq.Stage != "" {
		cond, stageArgs, err := stageCondition(lq.Stage, lq.Now)
		if err != nil {
			return "", nil, err
		}
		// The stored stage picks the index that serves the order asked;
		// the exact condition at lq.Now drops a customer whose last order
		// aged past a threshold since the last upkeep (it is listed under
		// its new stage after the next one, at most a minute later).
		where.WriteString(" AND stage = ? AND " + cond)
		args = append(args, lq.Stage)
		args = append(args, stageArgs...)
	}
	dir, cmp := "ASC", ">"
	if lq.Desc {
		dir, cmp = "DESC", "<"
	}
	if lq.After != nil {
		fmt.Fprintf(&where, " AND (%s, customer_id) %s (?, ?)", col, cmp)
		args = append(args, lq.After.Value, lq.After.ID)
	}
	args = append(args, lq.Limit+1)
	return `SELECT ` + columns + ` FROM customers WHERE ` + where.String() +
		fmt.Sprintf(` ORDER BY %s %s, customer_id %s LIMIT ?`, col, dir, dir), args, nil
}

func sortValue(c *Customer, sort string) int64 {
	switch sort {
	case SortLastOrderAt:
		if c.LastOrderAt.IsZero() {
			return 0
		}
		return c.LastOrderAt.UnixMicro()
	case SortTotalSpent:
		return int64(c.TotalSpent)
	default:
		return c.CreatedAt.UnixMicro()
	}
}

// stageCondition is domain.LifecycleStage as a SQL condition over the
// indexed columns, so a stage filter needs no stored stage that would go
// stale as time passes.
//
// The terms on last_order_at are written +last_order_at: with a stage
// stored, the index to walk is the one of the sort key, and a range on
// last_order_at would otherwise lead the planner to the last-order index
// and a sort of the whole stage.
func stageCondition(stage string, now time.Time) (string, []any, error) {
	atRisk := now.Add(-domain.AtRiskAfter).UnixMicro()
	churned := now.Add(-domain.ChurnedAfter).UnixMicro()
	recent := "(+last_order_at = 0 OR +last_order_at >= ?)"
	switch stage {
	case domain.StageProspect:
		return "orders_count <= 0", nil, nil
	case domain.StageChurned:
		return "orders_count >= 1 AND +last_order_at <> 0 AND +last_order_at < ?", []any{churned}, nil
	case domain.StageAtRisk:
		return "orders_count >= 1 AND +last_order_at >= ? AND +last_order_at < ?", []any{churned, atRisk}, nil
	case domain.StageNew:
		return "orders_count = 1 AND " + recent, []any{atRisk}, nil
	case domain.StageActive:
		return fmt.Sprintf("orders_count >= 2 AND orders_count < %d AND ", domain.LoyalMinOrders) + recent, []any{atRisk}, nil
	case domain.StageLoyal:
		return fmt.Sprintf("orders_count >= %d AND ", domain.LoyalMinOrders) + recent, []any{atRisk}, nil
	}
	return "", nil, domain.Invalid("filter[lifecycle_stage]", "unknown lifecycle stage")
}

type scanner interface{ Scan(...any) error }

func scan(s scanner) (*Customer, error) {
	var c Customer
	var spent, lastOrder, created, updated int64
	var tags, platformTags string
	if err := s.Scan(&c.ID, &c.ShopID, &c.ExternalID, &c.Email, &c.FirstName, &c.LastName, &c.Phone,
		&c.AcceptsMarketing, &c.State, &c.Currency, &c.OrdersCount, &spent, &lastOrder, &tags, &platformTags,
		&created, &updated, &c.Redacted, &c.Version); err != nil {
		return nil, err
	}
	c.TotalSpent = domain.Amount(spent)
	if lastOrder != 0 {
		c.LastOrderAt = time.UnixMicro(lastOrder).UTC()
	}
	c.CreatedAt = time.UnixMicro(created).UTC()
	c.UpdatedAt = time.UnixMicro(updated).UTC()
	var err error
	if c.Tags, err = decodeTags(tags); err != nil {
		return nil, fmt.Errorf("customer %s tags: %w", c.ID, err)
	}
	if c.PlatformTags, err = decodeTags(platformTags); err != nil {
		return nil, fmt.Errorf("customer %s platform tags: %w", c.ID, err)
	}
	return &c, nil
}

// decodeTags reads a JSON array of tags; the empty array, which most
// customers have, needs no decoder.
func decodeTags(s string) ([]string, error) {
	if s == "[]" {
		return []string{}, nil
	}
	var tags []string
	if err := json.Unmarshal([]byte(s), &tags); err != nil {
		return nil, err
	}
	return tags, nil
}

// CountAudience counts the customers of shop an audience's filters select
// at now: at one of the stages (any when none), with every tag, total spent
// and last order within the bounds (inclusive). A stage filter walks the
// stage index; the tags are matched in the stored JSON arrays.
func (q *Queries) CountAudience(ctx context.Context, shop string, f domain.AudienceFilters, now time.Time) (int, error) {
	where, args, err := audienceWhere(shop, f, now)
	if err != nil {
		return 0, err
	}
	var n int
	if err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM customers WHERE `+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count audience: %w", err)
	}
	return n, nil
}

// audienceWhere is the condition on customers rows (and its arguments)
// that selects the customers of shop an audience's filters select at now.
func audienceWhere(shop string, f domain.AudienceFilters, now time.Time) (string, []any, error) {
	var where strings.Builder
	args := []any{shop}
	where.WriteString("shop_id = ?")
	if len(f.LifecycleStages) > 0 {
		where.WriteString(" AND (")
		for i, stage := range f.LifecycleStages {
			cond, stageArgs, err := stageCondition(stage, now)
			if err != nil {
				return "", nil, err
			}
			if i > 0 {
				where.WriteString(" OR ")
			}
			where.WriteString("(stage = ? AND " + cond + ")")
			args = append(args, stage)
			args = append(args, stageArgs...)
		}
		where.WriteString(")")
	}
	for _, tag := range f.Tags {
		where.WriteString(" AND EXISTS (SELECT 1 FROM json_each(customers.tags) WHERE json_each.value = ?)")
		args = append(args, tag)
	}
	if f.MinTotalSpent != nil {
		where.WriteString(" AND total_spent >= ?")
		args = append(args, int64(*f.MinTotalSpent))
	}
	if f.MaxTotalSpent != nil {
		where.WriteString(" AND total_spent <= ?")
		args = append(args, int64(*f.MaxTotalSpent))
	}
	if f.LastOrderAfter != nil {
		where.WriteString(" AND last_order_at <> 0 AND last_order_at >= ?")
		args = append(args, f.LastOrderAfter.UnixMicro())
	}
	if f.LastOrderBefore != nil {
		where.WriteString(" AND last_order_at <> 0 AND last_order_at <= ?")
		args = append(args, f.LastOrderBefore.UnixMicro())
	}
	return where.String(), args, nil
}

// GetMany returns the customers of shop among ids, by id; ids of another
// shop or unknown are absent. One query per call.
func (q *Queries) GetMany(ctx context.Context, shop string, ids []string) (map[string]*Customer, error) {
	out := make(map[string]*Customer, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := q.db.QueryContext(ctx, `SELECT `+columns+` FROM customers
		WHERE customer_id IN (SELECT value FROM json_each(?)) AND shop_id = ?`, string(list), shop)
	if err != nil {
		return nil, fmt.Errorf("get customers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out[c.ID] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("get customers: %w", err)
	}
	return out, nil
}
