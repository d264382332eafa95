package main

import (
	"crypto/rand"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	_ "github.com/mattn/go-sqlite3"
)

func main() {
	n := flag.Int("n", 200000, "")
	batch := flag.Int("batch", 32, "")
	v7 := flag.Bool("v7", false, "")
	ckpt := flag.Int("ckpt", 1000, "")
	cache := flag.Int("cache", 2000, "KiB")
	noidx := flag.Bool("noidx", false, "")
	sync := flag.String("sync", "FULL", "")
	page := flag.Int("page", 4096, "")
	flag.Parse()
	dir, _ := os.MkdirTemp("", "exp")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "x.db")
	db, err := sql.Open("sqlite3", fmt.Sprintf("file:%s?_journal_mode=WAL&_synchronous=%s&_txlock=immediate&_cache_size=-%d", path, *sync, *cache))
	if err != nil {
		panic(err)
	}
	db.SetMaxOpenConns(1)
	db.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint=%d", *ckpt))
	_ = page
	schema := `CREATE TABLE events (
	position INTEGER PRIMARY KEY AUTOINCREMENT, event_id BLOB NOT NULL UNIQUE, stream TEXT NOT NULL,
	revision INTEGER NOT NULL, type TEXT NOT NULL, schema_version INTEGER NOT NULL, shop_id TEXT NOT NULL,
	occurred_at INTEGER NOT NULL, recorded_at INTEGER NOT NULL, data BLOB NOT NULL, metadata TEXT NOT NULL,
	prev_hash BLOB, hash BLOB NOT NULL, UNIQUE (stream, revision)) STRICT`
	if *noidx {
		schema = `CREATE TABLE events (
	position INTEGER PRIMARY KEY AUTOINCREMENT, event_id BLOB NOT NULL, stream TEXT NOT NULL,
	revision INTEGER NOT NULL, type TEXT NOT NULL, schema_version INTEGER NOT NULL, shop_id TEXT NOT NULL,
	occurred_at INTEGER NOT NULL, recorded_at INTEGER NOT NULL, data BLOB NOT NULL, metadata TEXT NOT NULL,
	prev_hash BLOB, hash BLOB NOT NULL) STRICT`
	}
	if _, err := db.Exec(schema); err != nil {
		panic(err)
	}
	payload := make([]byte, 1024)
	rand.Read(payload)
	hash := make([]byte, 32)
	start := time.Now()
	for from := 0; from < *n; from += *batch {
		tx, _ := db.Begin()
		stmt, _ := tx.Prepare(`INSERT INTO events (event_id, stream, revision, type, schema_version, shop_id, occurred_at, recorded_at, data, metadata, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		for i := from; i < from+*batch && i < *n; i++ {
			var id uuid.UUID
			if *v7 {
				id, _ = uuid.NewV7()
			} else {
				id = uuid.New()
			}
			a := i % 64
			k := i / 64
			if _, err := stmt.Exec(id[:], fmt.Sprintf("bench-%d-%d", a, k/100), k%100, "BenchAppended", 1, "shop", 1, 1, payload, "{}", hash, hash); err != nil {
				panic(err)
			}
		}
		if err := tx.Commit(); err != nil {
			panic(err)
		}
	}
	el := time.Since(start)
	fi, _ := os.Stat(path)
	fmt.Printf("%.0f rows/s  db %d MB\n", float64(*n)/el.Seconds(), fi.Size()>>20)
}
