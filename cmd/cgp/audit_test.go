package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// tamper runs SQL on the embedded log file with the append-only triggers
// removed, as an attacker with file access would.
func tamper(t *testing.T, dir string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'`)
	if err != nil {
		t.Fatal(err)
	}
	var triggers []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		triggers = append(triggers, n)
	}
	rows.Close()
	if len(triggers) == 0 {
		t.Fatal("the log has no append-only triggers")
	}
	for _, tr := range triggers {
		if _, err := db.Exec(`DROP TRIGGER "` + tr + `"`); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func auditVerify(t *testing.T, dir, shop string) (int, map[string]any) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"audit", "verify", "--shop", shop, "--data-dir", dir}, &out, &errb)
	var rep map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("audit verify printed %q (stderr %q)", out.String(), errb.String())
	}
	return code, rep
}

func TestAuditVerifyNamesTheAlteredEvent(t *testing.T) {
	for name, stmt := range map[string]string{
		"payload changed":  `UPDATE events SET data = CAST(data || x'00' AS BLOB) WHERE position = (SELECT MIN(position) FROM events WHERE stream LIKE 'customer-%')`,
		"metadata changed": `UPDATE events SET metadata = replace(metadata, 'test', 'evil') WHERE position = (SELECT MIN(position) FROM events WHERE stream LIKE 'customer-%')`,
		"event deleted":    `DELETE FROM events WHERE position = (SELECT MIN(position) FROM events WHERE stream LIKE 'customer-%')`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tn := newTenant(t, dir, "audit.example.com", "agency", "*")
			core, err := OpenCore(context.Background(), testConfig(dir), newLogger(&Config{LogLevel: "error"}, &syncBuffer{}))
			if err != nil {
				t.Fatal(err)
			}
			for i, tags := range [][]string{nil, {"a"}, {"b"}} {
				if i == 0 {
					if _, err := core.Commands.RecordCustomer(context.Background(), recordCustomer(tn.shopID, "77"), testMeta()); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if _, err := core.Commands.SetCustomerTags(context.Background(), setTags(tn.shopID, "77", tags), testMeta()); err != nil {
					t.Fatal(err)
				}
			}
			core.Close()
			if code, rep := auditVerify(t, dir, tn.shopID); code != 0 || rep["intact"] != true || rep["events_checked"].(float64) != 6 {
				t.Fatalf("untouched history: exit %d, %v", code, rep)
			}
			var target string
			for _, e := range readLog(t, dir) {
				if strings.HasPrefix(e.StreamID, "customer-") {
					target = e.ID.String()
					break
				}
			}
			tamper(t, dir, stmt)
			code, rep := auditVerify(t, dir, tn.shopID)
			if code == 0 || rep["intact"] != false {
				t.Fatalf("altered history passed: exit %d, %v", code, rep)
			}
			if name != "event deleted" && rep["first_bad_event"] != target {
				t.Fatalf("named %v, want %s (%v)", rep["first_bad_event"], target, rep)
			}
			if name == "event deleted" && !strings.Contains(rep["problem"].(string), "revision") {
				t.Fatalf("deletion reported as %v", rep["problem"])
			}
		})
	}
}
