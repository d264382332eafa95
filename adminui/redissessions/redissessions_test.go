package redissessions_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cgp-platform/cgp/adminui"
	"github.com/cgp-platform/cgp/adminui/redissessions"
	"github.com/cgp-platform/cgp/adminui/sessionstest"
)

// Redis runs on every development and CI machine (127.0.0.1:6379, or
// CGP_TEST_REDIS_URL): the suite always runs, under a prefix of its own.
func client(t *testing.T) *goredis.Client {
	url := os.Getenv("CGP_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func prefix(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "cgp:test:session:" + hex.EncodeToString(b) + ":"
}

func TestStore(t *testing.T) {
	c := client(t)
	sessionstest.Run(t, func(t *testing.T, now func() time.Time) adminui.SessionStore {
		s, err := redissessions.New(redissessions.Config{Client: c, Prefix: prefix(t), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Only the id's hash is in Redis, and a session expires in Redis too.
func TestStoreKeepsOnlyTheHashWithATTL(t *testing.T) {
	ctx := context.Background()
	c := client(t)
	p := prefix(t)
	s, err := redissessions.New(redissessions.Config{Client: c, Prefix: p})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.Create(ctx, "usr_1")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, p+"*").Result()
	if err != nil || len(keys) != 1 || keys[0] != p+adminui.SessionHash(raw) {
		t.Fatalf("keys %v %v", keys, err)
	}
	ttl, err := c.TTL(ctx, keys[0]).Result()
	if err != nil || ttl <= 0 || ttl > adminui.IdleTimeout+time.Minute {
		t.Fatalf("ttl %v %v", ttl, err)
	}
	vals, err := c.HGetAll(ctx, keys[0]).Result()
	if err != nil || vals["user"] != "usr_1" {
		t.Fatalf("hash %v %v", vals, err)
	}
	for _, v := range vals {
		if v == raw {
			t.Fatal("the raw id is stored")
		}
	}
	if err := s.Delete(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, keys[0]).Result(); n != 0 {
		t.Fatal("a deleted session stays in Redis")
	}
}
