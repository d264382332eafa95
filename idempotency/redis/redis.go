package redis

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cgp-platform/cgp/idempotency"
)

// DefaultPrefix starts every Redis key of the store.
const DefaultPrefix = "cgp:idempotency:"

// Config configures a Redis idempotency store.
type Config struct {
	// Client is the Redis client (a *goredis.Client, a ClusterClient, …).
	// The caller owns it and closes it after the store's last use.
	Client goredis.UniversalClient
	// Prefix starts every Redis key of the store. Defaults to
	// DefaultPrefix. Servers sharing the records must share the prefix.
	Prefix string
	// Lease is how long a claim in progress keeps the key from other
	// requests; after it the claim can be taken over. Millisecond
	// resolution. Defaults to idempotency.DefaultLease.
	Lease time.Duration
	// Window is how long a record lives from its first claim. Defaults to
	// idempotency.DefaultWindow.
	Window time.Duration
	// NewToken makes the owner token of a claim; it must not repeat.
	// Defaults to 26 random base32 characters from crypto/rand.
	NewToken func() string
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if c.Lease < 0 || c.Lease > 0 && c.Lease < time.Millisecond {
		errs = append(errs, errors.New("lease must be at least a millisecond"))
	}
	if c.Window < 0 || c.Window > 0 && c.Window < time.Millisecond {
		errs = append(errs, errors.New("window must be at least a millisecond"))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Lease == 0 {
		c.Lease = idempotency.DefaultLease
	}
	if c.Window == 0 {
		c.Window = idempotency.DefaultWindow
	}
	if c.NewToken == nil {
		c.NewToken = rand.Text
	}
}

// Store is the Redis idempotency.Store. It is safe for concurrent use, by
// goroutines and by servers sharing the Redis and the prefix.
type Store struct {
	client goredis.UniversalClient
	prefix string
	lease  int64 // ms
	window int64 // ms
	token  func() string
}

var _ idempotency.Store = (*Store)(nil)

// New returns a store over cfg.Client. It does not contact Redis.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new redis idempotency store: %w", err)
	}
	cfg.setDefaults()
	return &Store{
		client: cfg.Client,
		prefix: cfg.Prefix,
		lease:  cfg.Lease.Milliseconds(),
		window: cfg.Window.Milliseconds(),
		token:  cfg.NewToken,
	}, nil
}

// Result codes of beginScript.
const (
	codeStarted    = 1
	codeReplay     = 2
	codeMismatch   = 3
	codeInProgress = 4
)

// beginScript claims a key. KEYS: record, lease. ARGV: fingerprint, token,
// lease ms, window ms. Record fields: fp (fingerprint), st ("p" in
// progress, "d" done), tok (owner token), status, hdr, body.
//
// No record (never claimed, released, or expired with the window): a new
// record with the window as its TTL, and the lease set to the token
// unconditionally (a lease left by a claim of an expired record is stale).
// A record with another fingerprint: mismatch. A done record: its
// response. A record in progress: the lease is taken with SET NX, which
// fails while the holder's lease lives; when it succeeds the record gets
// the new token, which fences the old holder out.
var beginScript = goredis.NewScript(`
local rec = redis.call('HMGET', KEYS[1], 'fp', 'st')
if not rec[1] then
	redis.call('HSET', KEYS[1], 'fp', ARGV[1], 'st', 'p', 'tok', ARGV[2])
	redis.call('PEXPIRE', KEYS[1], ARGV[4])
	redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
	return {1, 0}
end
if rec[1] ~= ARGV[1] then
	return {3}
end
if rec[2] == 'd' then
	local r = redis.call('HMGET', KEYS[1], 'status', 'hdr', 'body')
	return {2, r[1], r[2], r[3]}
end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then
	redis.call('HSET', KEYS[1], 'tok', ARGV[2])
	return {1, 1}
end
return {4}
`)

// completeScript stores the response if the token still owns the record.
// KEYS: record, lease. ARGV: token, status, hdr, body. The record keeps
// its TTL: the window counts from the first claim.
var completeScript = goredis.NewScript(`
local rec = redis.call('HMGET', KEYS[1], 'tok', 'st')
if rec[1] ~= ARGV[1] or rec[2] ~= 'p' then
	return 0
end
redis.call('HSET', KEYS[1], 'st', 'd', 'tok', '', 'status', ARGV[2], 'hdr', ARGV[3], 'body', ARGV[4])
if redis.call('GET', KEYS[2]) == ARGV[1] then
	redis.call('DEL', KEYS[2])
end
return 1
`)

// releaseScript deletes the record if the token still owns it and nothing
// is stored. KEYS: record, lease. ARGV: token.
var releaseScript = goredis.NewScript(`
local rec = redis.call('HMGET', KEYS[1], 'tok', 'st')
if rec[1] ~= ARGV[1] or rec[2] ~= 'p' then
	return 0
end
redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then
	redis.call('DEL', KEYS[2])
end
return 1
`)

// Keys returns the Redis keys of (scope, key): the record and the lease.
// Both carry the same hash tag. Exported for tests and operators; the
// idempotency key itself never appears in them.
func (s *Store) Keys(scope, key string) (record, lease string) {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s%d:%s", len(scope), scope, len(key), key)
	tag := "{" + hex.EncodeToString(h.Sum(nil)) + "}"
	return s.prefix + tag, s.prefix + tag + ":lease"
}

// Begin implements idempotency.Store with one atomic script.
func (s *Store) Begin(ctx context.Context, scope, key, fingerprint string) (idempotency.Claim, error) {
	if err := idempotency.CheckBegin(scope, key, fingerprint); err != nil {
		return idempotency.Claim{}, fmt.Errorf("begin: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return idempotency.Claim{}, fmt.Errorf("begin: %w", err)
	}
	record, lease := s.Keys(scope, key)
	token := s.token()
	res, err := beginScript.Run(ctx, s.client, []string{record, lease},
		fingerprint, token, s.lease, s.window).Slice()
	if err != nil {
		return idempotency.Claim{}, fmt.Errorf("begin: %w", err)
	}
	c := idempotency.Claim{Scope: scope, Key: key, Fingerprint: fingerprint}
	code, err := intAt(res, 0)
	if err != nil {
		return idempotency.Claim{}, fmt.Errorf("begin: %w", err)
	}
	switch code {
	case codeStarted:
		takeover, err := intAt(res, 1)
		if err != nil {
			return idempotency.Claim{}, fmt.Errorf("begin: %w", err)
		}
		c.Outcome, c.Token, c.TakenOver = idempotency.Started, token, takeover == 1
	case codeReplay:
		resp, err := decodeResponse(res)
		if err != nil {
			return idempotency.Claim{}, fmt.Errorf("begin: %w", err)
		}
		c.Outcome, c.Response = idempotency.Replay, resp
	case codeMismatch:
		c.Outcome = idempotency.Mismatch
	case codeInProgress:
		c.Outcome = idempotency.InProgress
	default:
		return idempotency.Claim{}, fmt.Errorf("begin: script answered unknown code %d", code)
	}
	return c, nil
}

// Complete implements idempotency.Store with one atomic script.
func (s *Store) Complete(ctx context.Context, c idempotency.Claim, resp idempotency.Response) error {
	if err := idempotency.CheckEnd(c); err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	if err := resp.Validate(); err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	hdr, err := json.Marshal(resp.Header)
	if err != nil {
		return fmt.Errorf("complete: encode headers: %w", err)
	}
	body := resp.Body
	if body == nil {
		body = []byte{}
	}
	return s.end(ctx, "complete", completeScript, c, c.Token, resp.Status, hdr, body)
}

// Release implements idempotency.Store with one atomic script.
func (s *Store) Release(ctx context.Context, c idempotency.Claim) error {
	if err := idempotency.CheckEnd(c); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return s.end(ctx, "release", releaseScript, c, c.Token)
}

func (s *Store) end(ctx context.Context, op string, script *goredis.Script, c idempotency.Claim, args ...any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	record, lease := s.Keys(c.Scope, c.Key)
	n, err := script.Run(ctx, s.client, []string{record, lease}, args...).Int()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, idempotency.ErrClaimLost)
	}
	return nil
}

func intAt(res []any, i int) (int64, error) {
	if i >= len(res) {
		return 0, fmt.Errorf("script answered %d values, want more than %d", len(res), i)
	}
	n, ok := res[i].(int64)
	if !ok {
		return 0, fmt.Errorf("script answered %T at %d, want an integer", res[i], i)
	}
	return n, nil
}

// decodeResponse reads {2, status, hdr, body} from beginScript.
func decodeResponse(res []any) (idempotency.Response, error) {
	if len(res) != 4 {
		return idempotency.Response{}, fmt.Errorf("replay answered %d values, want 4", len(res))
	}
	fields := make([]string, 3)
	for i := range fields {
		v, ok := res[i+1].(string)
		if !ok {
			return idempotency.Response{}, fmt.Errorf("stored response field %d is %T, want a string", i, res[i+1])
		}
		fields[i] = v
	}
	status, err := strconv.Atoi(fields[0])
	if err != nil {
		return idempotency.Response{}, fmt.Errorf("stored status: %w", err)
	}
	resp := idempotency.Response{Status: status, Body: []byte(fields[2])}
	if err := json.Unmarshal([]byte(fields[1]), &resp.Header); err != nil {
		return idempotency.Response{}, fmt.Errorf("stored headers: %w", err)
	}
	return resp, nil
}

// Forget implements idempotency.Forgetter: it scans the store's records
// (SCAN over the prefix, never KEYS) and deletes those whose stored body
// contains one of needles. Redis keeps the data in memory (and in its own
// persistence files when configured, outside the service's data dir).
func (s *Store) Forget(ctx context.Context, needles ...string) (int64, error) {
	var total int64
	iter := s.client.Scan(ctx, 0, s.prefix+"*", 500).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		if strings.HasSuffix(key, ":lease") {
			continue
		}
		body, err := s.client.HGet(ctx, key, "body").Bytes()
		if errors.Is(err, goredis.Nil) {
			continue
		}
		if err != nil {
			return total, fmt.Errorf("forget: %w", err)
		}
		for _, n := range needles {
			if n != "" && bytes.Contains(body, []byte(n)) {
				if err := s.client.Del(ctx, key).Err(); err != nil {
					return total, fmt.Errorf("forget: %w", err)
				}
				total++
				break
			}
		}
	}
	if err := iter.Err(); err != nil {
		return total, fmt.Errorf("forget: %w", err)
	}
	return total, nil
}
