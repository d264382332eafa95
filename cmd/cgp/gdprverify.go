package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/internal/sqlitedb"
	"github.com/cgp-platform/cgp/readmodel/versioned/outbox"
	"github.com/cgp-platform/cgp/vault"
)

// ErasureCheck is one point of an erasure report.
type ErasureCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// ErasureReport is what `cgp gdpr verify` prints.
type ErasureReport struct {
	ShopID       string         `json:"shop_id"`
	CustomerID   string         `json:"customer_id"`
	Erased       bool           `json:"erased"`
	Checks       []ErasureCheck `json:"checks"`
	FilesScanned int            `json:"files_scanned"`
	BytesScanned int64          `json:"bytes_scanned"`
}

func (r *ErasureReport) add(name string, ok bool, detail string) {
	r.Checks = append(r.Checks, ErasureCheck{Name: name, OK: ok, Detail: detail})
	r.Erased = r.Erased && ok
}

func newGDPRVerify(cfg *Config, stdout, stderr io.Writer) *cobra.Command {
	var shop, customer string
	var search []string
	cmd := &cobra.Command{Use: "verify --shop SHOP_ID --customer CUS_ID [--search VALUE]...",
		Short: "Check that a customer's erasure is complete: key shredded, audit entry, read models nulled, no value left in any file",
		Long: `Checks, for an operator or a data-protection officer, that a customers/redact was carried out:
the customer's data key is shredded, the CustomerErased audit entry is in the log, no read model
holds the customer's personal data, identity links and active journey enrollments are gone, no
clean-up is pending, and none of the values given with --search (the e-mail address, names, phone
number the request named) appears in any byte of any file of the data directory (event log, read
models, vault, SQLite WAL files and free pages, idempotency store, everything). Prints a JSON report;
exits 1 when the erasure is not complete.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "shop", "customer"); err != nil {
				return err
			}
			if !domain.HasPrefixID(customer, domain.PrefixCustomer) {
				return usageError{errors.New("--customer must be a customer id (cus_…)")}
			}
			for _, v := range search {
				if len(strings.TrimSpace(v)) < 3 {
					return usageError{errors.New("--search values must have at least 3 characters")}
				}
			}
			return withCore(cmd.Context(), cfg, stderr, func(c *Core) error {
				rep, err := VerifyErasure(cmd.Context(), c, *cfg, shop, customer, search)
				if err != nil {
					return err
				}
				if err := printJSON(stdout, rep); err != nil {
					return err
				}
				if !rep.Erased {
					return fmt.Errorf("the erasure of customer %s is not complete", customer)
				}
				return nil
			})
		}}
	cmd.Flags().StringVar(&shop, "shop", "", "shop id (shop_…)")
	cmd.Flags().StringVar(&customer, "customer", "", "customer id (cus_…)")
	cmd.Flags().StringArrayVar(&search, "search", nil, "a value that must appear in no file (repeatable)")
	cmd.Flags().StringVar(&cfg.Warehouse, "warehouse", warehouseNone, "the warehouse cgp serve ships to (none, sqlite or clickhouse; env CGP_WAREHOUSE): its copy of the profile is checked too")
	cmd.Flags().StringVar(&cfg.WarehouseURL, "warehouse-url", "", "ClickHouse URL with --warehouse clickhouse (env CGP_WAREHOUSE_URL)")
	return cmd
}

// VerifyErasure checks that the customer's erasure is complete (see
// newGDPRVerify) and searches every file under cfg.DataDir for values.
func VerifyErasure(ctx context.Context, c *Core, cfg Config, shop, customer string, values []string) (*ErasureReport, error) {
	rep := &ErasureReport{ShopID: shop, CustomerID: customer, Erased: true}
	_, err := c.Vault.DataKey(ctx, shop, customer, false)
	switch {
	case errors.Is(err, vault.ErrShredded):
		rep.add("data_key_shredded", true, "")
	case errors.Is(err, vault.ErrNotFound):
		rep.add("data_key_shredded", true, "the vault never held a key for this customer")
	case err != nil:
		return nil, err
	default:
		rep.add("data_key_shredded", false, "the customer's data key is still in the vault")
	}
	evs, err := c.Log.ReadStream(ctx, domain.CustomerStream(customer), 0, 1<<20)
	if err != nil {
		return nil, err
	}
	audit := false
	for _, e := range evs {
		audit = audit || (e.Type == "CustomerErased" && e.ShopID == shop)
	}
	rep.add("audit_entry", audit, map[bool]string{false: "no CustomerErased event in the customer's stream"}[audit])
	if err := verifyReadModels(ctx, cfg, rep, shop, customer); err != nil {
		return nil, err
	}
	if err := verifyWarehouse(ctx, cfg, rep, shop, customer); err != nil {
		return nil, err
	}
	hits, files, size, err := SearchDataDir(cfg.DataDir, values)
	if err != nil {
		return nil, err
	}
	rep.FilesScanned, rep.BytesScanned = files, size
	detail := ""
	if len(hits) > 0 {
		detail = "found in " + strings.Join(hits, ", ")
	}
	rep.add("values_absent_from_every_file", len(hits) == 0, detail)
	return rep, nil
}

// verifyReadModels checks the live read-model version, read-only.
func verifyReadModels(ctx context.Context, cfg Config, rep *ErasureReport, shop, customer string) error {
	path, err := cfg.readModelPath()
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		rep.add("read_models", true, "no read-model file yet")
		return nil
	}
	db := sql.OpenDB(sqlitedb.Connector(path, "mode=ro", "PRAGMA busy_timeout = 10000;"))
	defer db.Close()
	for _, q := range []struct{ name, sql, fail string }{
		{"profile_nulled", `SELECT COUNT(*) FROM customers WHERE shop_id = ?1 AND customer_id = ?2
			AND (email IS NOT NULL OR first_name IS NOT NULL OR last_name IS NOT NULL OR phone IS NOT NULL)`,
			"the customer's profile still holds personal data"},
		{"orders_nulled", `SELECT COUNT(*) FROM orders WHERE shop_id = ?1 AND customer_id = ?2 AND email IS NOT NULL`,
			"orders of the customer still hold an e-mail address"},
		{"checkouts_nulled", `SELECT COUNT(*) FROM checkouts WHERE shop_id = ?1 AND customer_id = ?2 AND email IS NOT NULL`,
			"checkouts of the customer still hold an e-mail address"},
		{"messages_nulled", `SELECT COUNT(*) FROM inbound_messages WHERE shop_id = ?1 AND customer_id = ?2
			AND (from_phone IS NOT NULL OR profile_name IS NOT NULL OR text IS NOT NULL)`,
			"messages of the customer still hold personal data"},
		{"identity_links_deleted", `SELECT COUNT(*) FROM identity_links WHERE shop_id = ?1 AND customer_id = ?2`,
			"identity links of the customer remain"},
		{"enrollments_exited", `SELECT COUNT(*) FROM journey_enrollments WHERE shop_id = ?1 AND customer_id = ?2 AND status = 'active'`,
			"the customer is still enrolled in a journey"},
		{"clean_up_done", `SELECT COUNT(*) FROM erasure_followups WHERE shop_id = ?1 AND customer_id = ?2`,
			"the erasure's clean-up is still pending"},
	} {
		var n int
		if err := db.QueryRowContext(ctx, q.sql, shop, customer).Scan(&n); err != nil {
			if strings.Contains(err.Error(), "no such table") {
				rep.add(q.name, true, "no such read model yet")
				continue
			}
			return fmt.Errorf("%s: %w", q.name, err)
		}
		rep.add(q.name, n == 0, map[bool]string{true: q.fail}[n > 0])
	}
	return nil
}

// verifyWarehouse checks the warehouse's copy of the profile (ClickHouse
// at scale: outside the data directory): absent, or without personal data.
func verifyWarehouse(ctx context.Context, cfg Config, rep *ErasureReport, shop, customer string) error {
	if cfg.Warehouse == "" || cfg.Warehouse == warehouseNone {
		return nil
	}
	store, err := cfg.openReadModels()
	if err != nil {
		return err
	}
	defer store.Close()
	wh, err := openWarehouse(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer wh.Close()
	// The shipper's table definitions (from the read model's columns).
	if _, err := outbox.New(ctx, outbox.Config{ReadModels: store, Warehouse: wh, Sources: outbox.DefaultSources()}); err != nil {
		return err
	}
	var personal []int
	rows, err := store.DB().QueryContext(ctx, `SELECT cid, name FROM pragma_table_info('customers') ORDER BY cid`)
	if err != nil {
		return err
	}
	for i := 0; rows.Next(); i++ {
		var cid int
		var name string
		if err := rows.Scan(&cid, &name); err != nil {
			rows.Close()
			return err
		}
		if slices.Contains([]string{"email", "first_name", "last_name", "phone"}, name) {
			personal = append(personal, i)
		}
	}
	rows.Close()
	row, found, err := wh.Get(ctx, "customers", []any{shop, customer})
	if err != nil {
		return fmt.Errorf("warehouse: %w", err)
	}
	kept := false
	for _, i := range personal {
		if found && i < len(row.Values) && row.Values[i] != nil && row.Values[i] != "" {
			kept = true
		}
	}
	rep.add("warehouse_nulled", !kept, map[bool]string{true: "the warehouse's copy of the profile still holds personal data"}[kept])
	return nil
}

// SearchDataDir reads every regular file under dir, whole (the SQLite
// files with their WAL, journals and free pages included), and returns
// the files (relative to dir) holding one of values, how many files it
// read and how many bytes. A database's -wal file is read before the
// database itself: a checkpoint running meanwhile moves pages from the WAL
// into the database, never back, so a value cannot slip between the two
// reads.
func SearchDataDir(dir string, values []string) (hits []string, files int, size int64, err error) {
	needles := make([][]byte, 0, len(values))
	for _, v := range values {
		if v != "" {
			needles = append(needles, []byte(v))
		}
	}
	var paths []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // a file removed while walking
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, 0, 0, err
	}
	sort.SliceStable(paths, func(i, j int) bool { return readOrder(paths[i]) < readOrder(paths[j]) })
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, 0, 0, err
		}
		files++
		size += int64(len(b))
		for _, n := range needles {
			if bytes.Contains(b, n) {
				rel, _ := filepath.Rel(dir, path)
				hits = append(hits, rel)
				break
			}
		}
	}
	sort.Strings(hits)
	return hits, files, size, nil
}

// readOrder sorts a database's WAL and journal before the database.
func readOrder(path string) string {
	for _, suffix := range []string{"-wal", "-journal"} {
		if base, ok := strings.CutSuffix(path, suffix); ok {
			return base + "\x00" + suffix
		}
	}
	return path + "\x01"
}

// gdprCommands are the subcommands of `cgp gdpr`.
func gdprCommands(cfg *Config, stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{newGDPRVerify(cfg, stdout, stderr)}
}
