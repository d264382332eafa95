package app

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cgp-platform/cgp/domain"
	"github.com/cgp-platform/cgp/eventlog"
	"github.com/cgp-platform/cgp/internal/sqlitedb"
	"github.com/cgp-platform/cgp/projections/attribution"
	"github.com/cgp-platform/cgp/projections/commerce"
	"github.com/cgp-platform/cgp/projections/conversations"
	"github.com/cgp-platform/cgp/projections/customers"
	"github.com/cgp-platform/cgp/projections/erasure"
	"github.com/cgp-platform/cgp/projections/journeys"
	"github.com/cgp-platform/cgp/projections/messaging"
	"github.com/cgp-platform/cgp/projections/reviews"
	"github.com/cgp-platform/cgp/readmodel"
	"github.com/cgp-platform/cgp/readmodel/versioned"
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

// ErasureSources are what VerifyErasure reads.
type ErasureSources struct {
	Vault vault.Vault
	Log   eventlog.Log
	// DataDir is searched, every file of it, for the values.
	DataDir string
	// ReadModels is the path of the live read-model version.
	ReadModels string
	// Warehouse opens the warehouse and the read models it is shipped
	// from; nil when there is none.
	Warehouse func(ctx context.Context) (versioned.Store, readmodel.Store, func(), error)
}

// VerifyErasure checks that the customer's erasure is complete (`cgp gdpr
// verify`): key shredded, audit entry, read models and warehouse nulled,
// clean-up done, and none of values in any file of the data directory.
func VerifyErasure(ctx context.Context, src ErasureSources, shop, customer string, values []string) (*ErasureReport, error) {
	rep := &ErasureReport{ShopID: shop, CustomerID: customer, Erased: true}
	_, err := src.Vault.DataKey(ctx, shop, customer, false)
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
	evs, err := src.Log.ReadStream(ctx, domain.CustomerStream(customer), 0, 1<<20)
	if err != nil {
		return nil, err
	}
	audit := false
	for _, e := range evs {
		audit = audit || (e.Type == "CustomerErased" && e.ShopID == shop)
	}
	rep.add("audit_entry", audit, map[bool]string{false: "no CustomerErased event in the customer's stream"}[audit])
	if err := verifyReadModels(ctx, src.ReadModels, rep, shop, customer); err != nil {
		return nil, err
	}
	if err := verifyWarehouse(ctx, src.Warehouse, rep, shop, customer); err != nil {
		return nil, err
	}
	hits, files, size, err := SearchDataDir(src.DataDir, values)
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
func verifyReadModels(ctx context.Context, path string, rep *ErasureReport, shop, customer string) error {
	if _, err := os.Stat(path); err != nil {
		rep.add("read_models", true, "no read-model file yet")
		return nil
	}
	db := sql.OpenDB(sqlitedb.Connector(path, "mode=ro", "PRAGMA busy_timeout = 10000;"))
	defer db.Close()
	type left func(ctx context.Context, shop, customer string) (int, error)
	cus, com, msg := customers.NewQueries(db), commerce.NewQueries(db), messaging.NewQueries(db)
	att, jrn, ers := attribution.NewQueries(db), journeys.NewQueries(db), erasure.NewQueries(db)
	cnv, rvw := conversations.NewQueries(db), reviews.NewQueries(db)
	for _, q := range []struct {
		name  string
		count left
		fail  string
	}{
		{"profile_nulled", cus.ProfilesLeft, "the customer's profile still holds personal data"},
		{"orders_nulled", com.OrdersLeft, "orders of the customer still hold an e-mail address"},
		{"checkouts_nulled", com.CheckoutsLeft, "checkouts of the customer still hold an e-mail address"},
		{"messages_nulled", msg.MessagesLeft, "messages of the customer still hold personal data"},
		{"conversations_nulled", cnv.TextsLeft, "conversations of the customer still hold personal data"},
		{"reviews_nulled", rvw.TextsLeft, "reviews of the customer still hold their texts or name"},
		{"identity_links_deleted", att.IdentityLinksLeft, "identity links of the customer remain"},
		{"enrollments_exited", jrn.ActiveEnrollmentsLeft, "the customer is still enrolled in a journey"},
		{"clean_up_done", ers.FollowupsLeft, "the erasure's clean-up is still pending"},
	} {
		n, err := q.count(ctx, shop, customer)
		if err != nil {
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
func verifyWarehouse(ctx context.Context, open func(ctx context.Context) (versioned.Store, readmodel.Store, func(), error),
	rep *ErasureReport, shop, customer string) error {
	if open == nil {
		return nil
	}
	wh, store, done, err := open(ctx)
	if err != nil {
		return err
	}
	defer done()
	// The shipper's table definitions (from the read model's columns).
	if _, err := outbox.New(ctx, outbox.Config{ReadModels: store, Warehouse: wh, Sources: outbox.DefaultSources()}); err != nil {
		return err
	}
	personal, err := customers.NewQueries(store.DB()).PersonalColumns(ctx)
	if err != nil {
		return err
	}
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
