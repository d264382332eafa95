package redis

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cgp-platform/cgp/limits"
)

// MinSecretSize is the least length of GuardConfig.Secret.
const MinSecretSize = 16

// GuardConfig configures NewGuard.
type GuardConfig struct {
	// Rules are the guard's thresholds and windows; zero fields take the
	// specification's values. Every server sharing the keys must use the
	// same rules.
	Rules limits.GuardConfig
	// Prefix is put before every key. Default DefaultPrefix.
	Prefix string
	// Secret keys the hash that names an address's keys (at least
	// MinSecretSize bytes). Every server sharing the keys must use the same
	// secret; derive it from the deployment's master key.
	Secret []byte
	// Now replaces the Redis server's clock; nil keeps it.
	Now func() time.Time
}

// Guard is the Redis limits.Guard.
type Guard struct {
	client goredis.UniversalClient
	prefix string
	secret []byte
	now    func() time.Time
	// args are the script's arguments after op and now.
	args []any
}

var _ limits.Guard = (*Guard)(nil)

// NewGuard returns a guard keeping its state in Redis. The client is the
// caller's to close.
func NewGuard(client goredis.UniversalClient, cfg GuardConfig) (*Guard, error) {
	cfg.Rules.SetDefaults()
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("no client"))
	}
	if len(cfg.Secret) < MinSecretSize {
		errs = append(errs, fmt.Errorf("secret must be at least %d bytes", MinSecretSize))
	}
	if err := cfg.Rules.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("redis brute-force guard: %w", err)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	r := cfg.Rules
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	return &Guard{
		client: client,
		prefix: cfg.Prefix + "bf:",
		secret: append([]byte(nil), cfg.Secret...),
		now:    cfg.Now,
		args: []any{
			ms(r.Window), r.FailuresPerWindow, ms(r.Bucket()), r.DayBuckets,
			r.BlockAt, ms(r.BlockFor), r.AlertAt, ms(r.DayWindow),
			ms(r.DayWindow + r.Bucket() + r.BlockFor), // expiry of the hash
		},
	}, nil
}

// Script operations.
const (
	opCheck   = 0
	opFail    = 1
	opSucceed = 2
)

// Check implements limits.Guard.
func (g *Guard) Check(ctx context.Context, ip netip.Addr) (limits.Verdict, error) {
	return g.run(ctx, opCheck, ip)
}

// Fail implements limits.Guard.
func (g *Guard) Fail(ctx context.Context, ip netip.Addr) (limits.Verdict, error) {
	return g.run(ctx, opFail, ip)
}

// Succeed implements limits.Guard.
func (g *Guard) Succeed(ctx context.Context, ip netip.Addr) error {
	_, err := g.run(ctx, opSucceed, ip)
	return err
}

var opNames = [...]string{opCheck: "check", opFail: "fail", opSucceed: "succeed"}

func (g *Guard) run(ctx context.Context, op int, ip netip.Addr) (limits.Verdict, error) {
	base := g.keyBase(limits.ClientKey(ip))
	now := ""
	if g.now != nil {
		now = strconv.FormatInt(g.now().UnixMilli(), 10)
	}
	args := make([]any, 0, 2+len(g.args))
	args = append(args, op, now)
	args = append(args, g.args...)
	res, err := guardScript.Run(ctx, g.client, []string{base + ":d", base + ":m"}, args...).Int64Slice()
	if err != nil {
		return limits.Verdict{}, limits.Unavailable("brute-force store", fmt.Errorf("guard %s: %w", opNames[op], err))
	}
	if len(res) != 5 {
		return limits.Verdict{}, fmt.Errorf("guard %s: script answered %d values, want 5", opNames[op], len(res))
	}
	v := limits.Verdict{
		Allowed:    res[0] == 1,
		RetryAfter: time.Duration(res[2]) * time.Millisecond,
		Alert:      res[3] == 1,
		Failures:   res[4] == 1,
	}
	switch res[1] {
	case 1:
		v.Code = limits.CodeTooManyFailedAttempts
	case 2:
		v.Code = limits.CodeIPBlocked
	}
	return v, nil
}

// keyBase names an address's keys without revealing it.
func (g *Guard) keyBase(k netip.Prefix) string {
	m := hmac.New(sha256.New, g.secret)
	b, _ := k.MarshalBinary() // cannot fail
	m.Write(b)
	var sum [sha256.Size]byte
	return g.prefix + "{" + hex.EncodeToString(m.Sum(sum[:0])[:16]) + "}"
}

// guardScript is the whole of the rules of limits.Guard for one call, run
// atomically. KEYS[1] is the hash (fields d:<bucket> counting attempts per
// day bucket, f:<bucket> the admitted failures among them, top the newest
// bucket, blk the end of a block, alr the end of
// the alert's silence), KEYS[2] the list of the latest admitted failure
// times, newest first. Times are milliseconds. It answers {allowed, code
// (0, 1 too_many_failed_attempts, 2 ip_blocked), retry-after, alert,
// failures on record}.
var guardScript = goredis.NewScript(`
local hk, lk = KEYS[1], KEYS[2]
local op = tonumber(ARGV[1])
local now = tonumber(ARGV[2])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local window, maxf = tonumber(ARGV[3]), tonumber(ARGV[4])
local bucket, nb = tonumber(ARGV[5]), tonumber(ARGV[6])
local blockAt, blockFor = tonumber(ARGV[7]), tonumber(ARGV[8])
local alertAt, day, ttl = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local function str(n) return string.format('%d', n) end

local blk = tonumber(redis.call('HGET', hk, 'blk') or '0')
if op == 2 then
  redis.call('DEL', hk, lk)
  if blk > now then
    redis.call('HSET', hk, 'blk', str(blk))
    redis.call('PEXPIRE', hk, str(blk - now))
  end
  return {1, 0, 0, 0, 0}
end

-- The day count: the current bucket and the nb before it.
local b = math.floor(now / bucket)
local top = tonumber(redis.call('HGET', hk, 'top') or '0')
if b < top then b = top end
local total, fails = 0, 0
local fields = redis.call('HGETALL', hk)
for i = 1, #fields, 2 do
  local f = fields[i]
  local kind = string.sub(f, 1, 2)
  if kind == 'd:' or kind == 'f:' then
    if tonumber(string.sub(f, 3)) < b - nb then
      redis.call('HDEL', hk, f)
    elseif kind == 'd:' then
      total = total + tonumber(fields[i + 1])
    else
      fails = fails + tonumber(fields[i + 1])
    end
  end
end

local code, retry = 0, 0
if blk > now then
  code, retry = 2, blk - now
else
  local oldest = redis.call('LINDEX', lk, maxf - 1)
  if oldest then
    oldest = tonumber(oldest)
    if oldest > now - window then code, retry = 1, oldest + window - now end
  end
end
if op == 0 and code == 0 then
  local failures = 0
  if total > 0 then failures = 1 end
  return {1, 0, 0, 0, failures}
end

-- Only an admitted failure counts towards the block; every attempt
-- counts towards the alert.
if code == 0 then
  redis.call('LPUSH', lk, str(now))
  redis.call('LTRIM', lk, 0, maxf - 1)
  redis.call('PEXPIRE', lk, str(window))
  redis.call('HINCRBY', hk, 'f:' .. str(b), 1)
  fails = fails + 1
  if blk <= now and fails >= blockAt then
    redis.call('HSET', hk, 'blk', str(now + blockFor))
  end
end
redis.call('HINCRBY', hk, 'd:' .. str(b), 1)
redis.call('HSET', hk, 'top', str(b))
total = total + 1
local alert = 0
local alr = tonumber(redis.call('HGET', hk, 'alr') or '0')
if total >= alertAt and alr <= now then
  redis.call('HSET', hk, 'alr', str(now + day))
  alert = 1
end
redis.call('PEXPIRE', hk, str(ttl))
local allowed = 0
if code == 0 then allowed = 1 end
return {allowed, code, retry, alert, 1}
`)
