package customers

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// The batch fold's reads and writes: load reads the rows a batch needs by
// key, a chunk of keys per statement; write writes each changed row once.

// chunk is the most keys bound in one statement.
const chunk = 500

// inChunks calls fn with the keys, chunk at a time, and a list of as many
// placeholders.
func inChunks(ids []string, fn func(args []any, marks string) error) error {
	for len(ids) > 0 {
		n := min(len(ids), chunk)
		args := make([]any, n)
		for i, id := range ids[:n] {
			args[i] = id
		}
		if err := fn(args, strings.Repeat(",?", n)[1:]); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

const customerColumns = `customer_id, shop_id, external_id, email, first_name, last_name, phone, accepts_marketing, state,
	currency, orders_count, total_spent, last_order_at, tags, platform_tags, platform_created_at, created_at, updated_at,
	redacted, version, profile_orders_count, profile_total_spent, stage`

const orderColumns = `order_id, shop_id, customer_id, total, refunded, cancelled, ordered_at, version`

func (c *customer) fields() []any {
	return []any{&c.ID, &c.Shop, &c.ExternalID, &c.Email, &c.FirstName, &c.LastName, &c.Phone, &c.AcceptsMarketing, &c.State,
		&c.Currency, &c.OrdersCount, &c.TotalSpent, &c.LastOrderAt, &c.Tags, &c.PlatformTags, &c.PlatformCreatedAt, &c.CreatedAt,
		&c.UpdatedAt, &c.Redacted, &c.Version, &c.ProfileOrdersCount, &c.ProfileSpent, &c.Stage}
}

func (o *order) fields() []any {
	return []any{&o.ID, &o.Shop, &o.Customer, &o.Total, &o.Refunded, &o.Cancelled, &o.OrderedAt, &o.Version}
}

// load reads the rows a batch naming k needs (see rows).
func load(ctx context.Context, tx *sql.Tx, k keySet) (*rows, error) {
	r := newRows()
	orderIDs, customerIDs := k.orders, k.customers
	loadOrders := func(where string) func(args []any, marks string) error {
		return func(args []any, marks string) error {
			rs, err := tx.QueryContext(ctx, `SELECT `+orderColumns+` FROM customer_orders WHERE `+where+` IN (`+marks+`)`, args...)
			if err != nil {
				return fmt.Errorf("load customer orders: %w", err)
			}
			defer rs.Close()
			for rs.Next() {
				o := &order{}
				if err := rs.Scan(o.fields()...); err != nil {
					return fmt.Errorf("load customer orders: %w", err)
				}
				r.orders[o.ID] = o
			}
			return rs.Err()
		}
	}
	if err := inChunks(orderIDs, loadOrders("order_id")); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(customerIDs))
	for _, id := range customerIDs {
		seen[id] = true
	}
	for _, o := range r.orders {
		if o.Customer != "" && !seen[o.Customer] {
			seen[o.Customer] = true
			customerIDs = append(customerIDs, o.Customer)
		}
	}
	if err := inChunks(customerIDs, loadOrders("customer_id")); err != nil {
		return nil, err
	}
	err := inChunks(customerIDs, func(args []any, marks string) error {
		rs, err := tx.QueryContext(ctx, `SELECT `+customerColumns+` FROM customers WHERE customer_id IN (`+marks+`)`, args...)
		if err != nil {
			return fmt.Errorf("load customers: %w", err)
		}
		defer rs.Close()
		for rs.Next() {
			c := &customer{}
			if err := rs.Scan(c.fields()...); err != nil {
				return fmt.Errorf("load customers: %w", err)
			}
			r.customers[c.ID] = c
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	err = inChunks(orderIDs, func(args []any, marks string) error {
		rs, err := tx.QueryContext(ctx, `SELECT refund_id, order_id, amount FROM customer_refunds WHERE order_id IN (`+marks+`)`, args...)
		if err != nil {
			return fmt.Errorf("load customer refunds: %w", err)
		}
		defer rs.Close()
		for rs.Next() {
			var id, orderID string
			var amount int64
			if err := rs.Scan(&id, &orderID, &amount); err != nil {
				return fmt.Errorf("load customer refunds: %w", err)
			}
			r.refunds[id] = true
			r.refunded[orderID] += amount
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	// A refund may be kept under another order than the one it names.
	err = inChunks(k.refunds, func(args []any, marks string) error {
		rs, err := tx.QueryContext(ctx, `SELECT refund_id FROM customer_refunds WHERE refund_id IN (`+marks+`)`, args...)
		if err != nil {
			return fmt.Errorf("load customer refunds: %w", err)
		}
		defer rs.Close()
		for rs.Next() {
			var id string
			if err := rs.Scan(&id); err != nil {
				return fmt.Errorf("load customer refunds: %w", err)
			}
			r.refunds[id] = true
		}
		return rs.Err()
	})
	if err != nil {
		return nil, err
	}
	if err := loadConsents(ctx, tx, r, k.consents); err != nil {
		return nil, err
	}
	return r, nil
}

// rowsPerStatement is the most rows one statement writes.
const rowsPerStatement = 100

// upsert is an INSERT of rows of columns into table that replaces every
// column of a row already kept under key.
func upsert(table, key, columns string, n, rows int) string {
	var set []string
	for _, c := range strings.Split(columns, ",") {
		if c = strings.TrimSpace(c); c != key {
			set = append(set, c+" = excluded."+c)
		}
	}
	row := ",(" + strings.Repeat(",?", n)[1:] + ")"
	return `INSERT INTO ` + table + ` (` + columns + `) VALUES ` + strings.Repeat(row, rows)[1:] +
		` ON CONFLICT (` + key + `) DO UPDATE SET ` + strings.Join(set, ", ")
}

// writeRows writes rows (each given as its column values) rowsPerStatement
// at a time.
func writeRows(ctx context.Context, tx *sql.Tx, table, key, columns string, n int, rows [][]any) error {
	for len(rows) > 0 {
		k := min(len(rows), rowsPerStatement)
		args := make([]any, 0, k*n)
		for _, r := range rows[:k] {
			args = append(args, r...)
		}
		if _, err := tx.ExecContext(ctx, upsert(table, key, columns, n, k), args...); err != nil {
			return fmt.Errorf("write %s: %w", table, err)
		}
		rows = rows[k:]
	}
	return nil
}

// write writes the rows a batch changed, each once.
func write(ctx context.Context, tx *sql.Tx, ch changes) error {
	cs := make([][]any, len(ch.customers))
	for i := range ch.customers {
		c := &ch.customers[i]
		cs[i] = []any{c.ID, c.Shop, c.ExternalID, c.Email, c.FirstName, c.LastName, c.Phone,
			c.AcceptsMarketing, c.State, c.Currency, c.OrdersCount, c.TotalSpent, c.LastOrderAt, c.Tags, c.PlatformTags,
			c.PlatformCreatedAt, c.CreatedAt, c.UpdatedAt, c.Redacted, c.Version, c.ProfileOrdersCount, c.ProfileSpent, c.Stage}
	}
	if err := writeRows(ctx, tx, "customers", "customer_id", customerColumns, 23, cs); err != nil {
		return err
	}
	os := make([][]any, len(ch.orders))
	for i := range ch.orders {
		o := &ch.orders[i]
		os[i] = []any{o.ID, o.Shop, o.Customer, o.Total, o.Refunded, o.Cancelled, o.OrderedAt, o.Version}
	}
	if err := writeRows(ctx, tx, "customer_orders", "order_id", orderColumns, 8, os); err != nil {
		return err
	}
	rs := make([][]any, len(ch.refunds))
	for i, rf := range ch.refunds {
		rs[i] = []any{rf.ID, rf.Order, rf.Amount}
	}
	if err := writeRows(ctx, tx, "customer_refunds", "refund_id", "refund_id, order_id, amount", 3, rs); err != nil {
		return err
	}
	return writeConsents(ctx, tx, ch)
}
