package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/readmodel"
	"github.com/cgp-platform/cgp/readmodel/versioned"
)

// Projector is the name under which the outbox's migration is recorded in
// the read-model store and under which the shipper's checkpoint (an
// outbox sequence) is kept in the warehouse.
const Projector = "warehouse-outbox"

// Source is one read-model table shipped to the warehouse.
type Source struct {
	// Table is the read-model table, shipped under the same name.
	Table string
	// Projector owns the table: its checkpoint versions the rows.
	Projector string
	// Key is the table's primary key in the read model.
	Key []string
	// WarehouseKey orders the table in the warehouse (e.g. shop_id then
	// order_id for prefix reads per shop). It must contain every Key
	// column; the triggers record it. Default Key.
	WarehouseKey []string
}

// Validate checks the names.
func (s Source) Validate() error {
	if err := versioned.ValidIdentifier(s.Table); err != nil {
		return fmt.Errorf("outbox source table: %w", err)
	}
	if s.Projector == "" || len(s.Key) == 0 {
		return fmt.Errorf("outbox source %s: projector and key are required: %w", s.Table, versioned.ErrInvalid)
	}
	for _, k := range append(append([]string(nil), s.Key...), s.WarehouseKey...) {
		if err := versioned.ValidIdentifier(k); err != nil {
			return fmt.Errorf("outbox source %s: key: %w", s.Table, err)
		}
	}
	for _, k := range s.Key {
		if len(s.WarehouseKey) > 0 && !contains(s.WarehouseKey, k) {
			return fmt.Errorf("outbox source %s: warehouse key lacks %s: %w", s.Table, k, versioned.ErrInvalid)
		}
	}
	return nil
}

// recorded is the key the triggers record: the warehouse key, which holds
// the read-model key, so that a deleted row's tombstone can name it.
func (s Source) recorded() []string {
	if len(s.WarehouseKey) > 0 {
		return s.WarehouseKey
	}
	return s.Key
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// DefaultSources are the read models shipped to the warehouse: the
// attribution projector's orders, credits and touchpoints and the
// customers projector's profiles, each ordered by shop first so that an
// analyst's reads are prefix reads.
func DefaultSources() []Source {
	return []Source{
		{Table: "attribution_orders", Projector: "attribution", Key: []string{"order_id"}, WarehouseKey: []string{"shop_id", "order_id"}},
		{Table: "attribution_credits", Projector: "attribution", Key: []string{"order_id", "model", "touchpoint_id"},
			WarehouseKey: []string{"shop_id", "order_id", "model", "touchpoint_id"}},
		{Table: "touchpoints", Projector: "attribution", Key: []string{"touchpoint_id"}, WarehouseKey: []string{"shop_id", "touchpoint_id"}},
		{Table: "customers", Projector: "customers", Key: []string{"customer_id"}, WarehouseKey: []string{"shop_id", "customer_id"}},
	}
}

// Migrations returns the outbox's read-model migrations for sources, to
// run under Projector after the sources' projectors were migrated (the
// triggers name their tables). Version 1 installs the given sources;
// shipping another table later needs a new version (a released migration
// never changes), which Migrations does not make for you.
func Migrations(sources []Source) ([]readmodel.Migration, error) {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS warehouse_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, key TEXT NOT NULL);\n")
	for _, s := range sources {
		if err := s.Validate(); err != nil {
			return nil, err
		}
		keyCols := s.recorded()
		rec := func(row string) string {
			cols := make([]string, len(keyCols))
			for i, k := range keyCols {
				cols[i] = row + `."` + k + `"`
			}
			return fmt.Sprintf("INSERT INTO warehouse_outbox (tbl, key) VALUES ('%s', json_array(%s));", s.Table, strings.Join(cols, ", "))
		}
		changed := make([]string, len(keyCols))
		for i, k := range keyCols {
			changed[i] = fmt.Sprintf(`OLD."%s" IS NOT NEW."%s"`, k, k)
		}
		oldCols := make([]string, len(keyCols))
		for i, k := range keyCols {
			oldCols[i] = `OLD."` + k + `"`
		}
		fmt.Fprintf(&b, "CREATE TRIGGER IF NOT EXISTS warehouse_outbox_%s_insert AFTER INSERT ON \"%s\" BEGIN %s END;\n", s.Table, s.Table, rec("NEW"))
		fmt.Fprintf(&b, "CREATE TRIGGER IF NOT EXISTS warehouse_outbox_%s_update AFTER UPDATE ON \"%s\" BEGIN %s "+
			"INSERT INTO warehouse_outbox (tbl, key) SELECT '%s', json_array(%s) WHERE %s; END;\n",
			s.Table, s.Table, rec("NEW"), s.Table, strings.Join(oldCols, ", "), strings.Join(changed, " OR "))
		fmt.Fprintf(&b, "CREATE TRIGGER IF NOT EXISTS warehouse_outbox_%s_delete AFTER DELETE ON \"%s\" BEGIN %s END;\n", s.Table, s.Table, rec("OLD"))
	}
	return []readmodel.Migration{{Version: 1, SQL: b.String()}}, nil
}

// Config configures a Shipper.
type Config struct {
	// ReadModels is the read-model store holding the sources and the
	// outbox (its DB is read; outbox rows are deleted through Maintain).
	ReadModels readmodel.Store
	// Warehouse receives the rows.
	Warehouse versioned.Store
	Sources   []Source
	// BatchSize is the number of outbox rows shipped at once. Default
	// 5000.
	BatchSize int
	// Interval is the pause of Run when the outbox is empty. Default 1 s.
	Interval time.Duration
}

// Shipper ships the outbox. Its methods must not be called concurrently.
type Shipper struct {
	cfg    Config
	tables map[string]shipTable
}

type shipTable struct {
	src   Source
	table versioned.Table
	// read selects the table's columns by its read-model key.
	read string
}

// New reads the columns of every source from the read-model store and
// creates the warehouse tables when missing.
func New(ctx context.Context, cfg Config) (*Shipper, error) {
	if cfg.ReadModels == nil || cfg.Warehouse == nil {
		return nil, errors.New("outbox shipper: ReadModels and Warehouse are required")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 5000
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	sh := &Shipper{cfg: cfg, tables: map[string]shipTable{}}
	var tables []versioned.Table
	for _, src := range cfg.Sources {
		if err := src.Validate(); err != nil {
			return nil, err
		}
		t, err := describe(ctx, cfg.ReadModels.DB(), src)
		if err != nil {
			return nil, err
		}
		where := make([]string, len(src.Key))
		for i, k := range src.Key {
			where[i] = `"` + k + `" = ?`
		}
		names := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			names[i] = `"` + c.Name + `"`
		}
		sh.tables[src.Table] = shipTable{src: src, table: t,
			read: fmt.Sprintf(`SELECT %s FROM "%s" WHERE %s`, strings.Join(names, ", "), src.Table, strings.Join(where, " AND "))}
		tables = append(tables, t)
	}
	if err := cfg.Warehouse.Migrate(ctx, tables); err != nil {
		return nil, fmt.Errorf("outbox shipper: %w", err)
	}
	return sh, nil
}

// describe maps src's read-model columns to a versioned table.
func describe(ctx context.Context, db *sql.DB, src Source) (versioned.Table, error) {
	rows, err := db.QueryContext(ctx, `SELECT name, type FROM pragma_table_info(?) ORDER BY cid`, src.Table)
	if err != nil {
		return versioned.Table{}, fmt.Errorf("outbox source %s: columns: %w", src.Table, err)
	}
	defer rows.Close()
	t := versioned.Table{Name: src.Table, Key: src.WarehouseKey}
	if len(t.Key) == 0 {
		t.Key = src.Key
	}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return versioned.Table{}, fmt.Errorf("outbox source %s: columns: %w", src.Table, err)
		}
		t.Columns = append(t.Columns, versioned.Column{Name: name, Type: affinity(typ)})
	}
	if err := rows.Err(); err != nil {
		return versioned.Table{}, fmt.Errorf("outbox source %s: columns: %w", src.Table, err)
	}
	if err := t.Validate(); err != nil {
		return versioned.Table{}, fmt.Errorf("outbox source %s: %w", src.Table, err)
	}
	return t, nil
}

// affinity maps a declared SQLite type to a column type (SQLite's own
// affinity rules, numeric folded into int64).
func affinity(declared string) versioned.Type {
	d := strings.ToUpper(declared)
	switch {
	case strings.Contains(d, "INT"):
		return versioned.Int64
	case strings.Contains(d, "REAL"), strings.Contains(d, "FLOA"), strings.Contains(d, "DOUB"):
		return versioned.Float64
	}
	return versioned.String
}

// Run ships until ctx ends, pausing Interval whenever the outbox is empty
// or a round failed (the failed rows are shipped again). It returns
// ctx's error.
func (sh *Shipper) Run(ctx context.Context, onErr func(error)) error {
	for {
		n, err := sh.ShipOnce(ctx)
		if err != nil && onErr != nil && ctx.Err() == nil {
			onErr(err)
		}
		if n == 0 || err != nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(sh.cfg.Interval):
			}
		}
	}
}

type pending struct {
	seq   int64
	table string
	key   string
}

// ShipOnce ships up to BatchSize outbox rows and returns how many. On
// error nothing is deleted from the outbox.
func (sh *Shipper) ShipOnce(ctx context.Context) (int, error) {
	entries, err := sh.readOutbox(ctx)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	versions := map[string]uint64{}
	for _, e := range entries {
		st, ok := sh.tables[e.table]
		if !ok {
			continue
		}
		if _, ok := versions[st.src.Projector]; !ok {
			cp, err := sh.cfg.ReadModels.Checkpoint(ctx, st.src.Projector)
			if err != nil {
				return 0, fmt.Errorf("ship outbox: %w", err)
			}
			versions[st.src.Projector] = max(cp, 1)
		}
	}
	changes, err := sh.readRows(ctx, entries, versions)
	if err != nil {
		return 0, err
	}
	last := entries[len(entries)-1].seq
	if err := sh.cfg.Warehouse.Write(ctx, Projector, uint64(last), changes); err != nil {
		return 0, fmt.Errorf("ship outbox to %d: %w", last, err)
	}
	if err := sh.cfg.Warehouse.Flush(ctx); err != nil {
		return 0, fmt.Errorf("ship outbox to %d: %w", last, err)
	}
	cp, err := sh.cfg.Warehouse.Checkpoint(ctx, Projector)
	if err != nil {
		return 0, fmt.Errorf("ship outbox to %d: %w", last, err)
	}
	if cp < uint64(last) {
		return 0, fmt.Errorf("ship outbox: warehouse checkpoint %d below %d after flush", cp, last)
	}
	if err := sh.cfg.ReadModels.Maintain(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM warehouse_outbox WHERE seq <= ?`, last)
		return err
	}); err != nil {
		return 0, fmt.Errorf("ship outbox: trim to %d: %w", last, err)
	}
	return len(entries), nil
}

func (sh *Shipper) readOutbox(ctx context.Context) ([]pending, error) {
	rows, err := sh.cfg.ReadModels.DB().QueryContext(ctx, `SELECT seq, tbl, key FROM warehouse_outbox ORDER BY seq LIMIT ?`, sh.cfg.BatchSize)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	defer rows.Close()
	var out []pending
	for rows.Next() {
		var p pending
		if err := rows.Scan(&p.seq, &p.table, &p.key); err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return out, nil
}

// readRows reads the current row of every distinct key (a tombstone when
// it is gone), once per key, in outbox order of the key's last change.
func (sh *Shipper) readRows(ctx context.Context, entries []pending, versions map[string]uint64) ([]versioned.Change, error) {
	lastOf := map[[2]string]int{}
	for i, e := range entries {
		lastOf[[2]string{e.table, e.key}] = i
	}
	var changes []versioned.Change
	for i, e := range entries {
		st, ok := sh.tables[e.table]
		if !ok || lastOf[[2]string{e.table, e.key}] != i {
			continue // a table no longer shipped, or a key changed again later
		}
		key, err := decodeKey(e.key)
		if err != nil {
			return nil, fmt.Errorf("outbox %d: %w", e.seq, err)
		}
		row, err := sh.readRow(ctx, st, key)
		if err != nil {
			return nil, fmt.Errorf("outbox %d: %w", e.seq, err)
		}
		row.Version = versions[st.src.Projector]
		changes = append(changes, versioned.Change{Table: e.table, Row: row})
	}
	return changes, nil
}

func decodeKey(s string) ([]any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var key []any
	if err := d.Decode(&key); err != nil {
		return nil, fmt.Errorf("key %q: %w", s, err)
	}
	for i, v := range key {
		if n, ok := v.(json.Number); ok {
			if iv, err := n.Int64(); err == nil {
				key[i] = iv
			} else if fv, err := n.Float64(); err == nil {
				key[i] = fv
			}
		}
	}
	return key, nil
}

// readRow returns the row with the read-model key, or a tombstone
// carrying the key when it is gone.
func (sh *Shipper) readRow(ctx context.Context, st shipTable, recorded []any) (versioned.Row, error) {
	rec := st.src.recorded()
	if len(recorded) != len(rec) {
		return versioned.Row{}, fmt.Errorf("%s: key of %d values, want %d: %w", st.src.Table, len(recorded), len(rec), versioned.ErrInvalid)
	}
	key := make([]any, len(st.src.Key))
	for i, k := range st.src.Key {
		for j, r := range rec {
			if r == k {
				key[i] = recorded[j]
			}
		}
	}
	vals := make([]any, len(st.table.Columns))
	dest := make([]any, len(vals))
	for i := range vals {
		dest[i] = &vals[i]
	}
	err := sh.cfg.ReadModels.DB().QueryRowContext(ctx, st.read, key...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return st.tombstone(rec, recorded), nil
	}
	if err != nil {
		return versioned.Row{}, fmt.Errorf("read %s: %w", st.src.Table, err)
	}
	for i, c := range st.table.Columns {
		vals[i] = convert(c.Type, vals[i])
	}
	row := versioned.Row{Values: vals}
	// The row moved to another warehouse key (a key column other than
	// the read model's changed): the recorded key is gone. The new key
	// has an outbox entry of its own.
	for j, r := range rec {
		for i, c := range st.table.Columns {
			if c.Name == r && vals[i] != convert(c.Type, recorded[j]) {
				return st.tombstone(rec, recorded), nil
			}
		}
	}
	return row, nil
}

// tombstone is the tombstone of the row whose recorded key columns rec
// hold recorded.
func (st shipTable) tombstone(rec []string, recorded []any) versioned.Row {
	stone := make([]any, len(st.table.Columns))
	for i, c := range st.table.Columns {
		stone[i] = c.Type.Zero()
		for j, k := range rec {
			if k == c.Name {
				stone[i] = convert(c.Type, recorded[j])
			}
		}
	}
	return versioned.Row{Values: stone, Deleted: true}
}

// convert turns a value read from SQLite (or a key decoded from JSON) into
// the column's type; NULL becomes the zero value.
func convert(t versioned.Type, v any) any {
	switch x := v.(type) {
	case nil:
		return t.Zero()
	case []byte:
		v = string(x)
	}
	switch t {
	case versioned.Int64:
		switch x := v.(type) {
		case int64:
			return x
		case float64:
			return int64(x)
		}
	case versioned.Float64:
		switch x := v.(type) {
		case float64:
			return x
		case int64:
			return float64(x)
		}
	case versioned.String:
		switch x := v.(type) {
		case string:
			return x
		case int64, float64:
			return fmt.Sprint(x)
		}
	}
	return t.Zero()
}
