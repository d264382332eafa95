package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/cgp-platform/cgp/lease"
)

// Defaults of Config.
const (
	DefaultNamespace = "cgp"
	DefaultPoll      = time.Second
	DefaultCheck     = time.Second
	DefaultTimeout   = 5 * time.Second
)

// Config configures the PostgreSQL leases.
type Config struct {
	// DSN is the pgx connection string (URL or key=value). Required.
	DSN string
	// Namespace is hashed into every lock key with the lease's name, so
	// that deployments sharing a database do not share leases.
	// DefaultNamespace when empty.
	Namespace string
	// Poll is how often a waiting Run tries the lock again (and connects
	// again after a failure). DefaultPoll when zero.
	Poll time.Duration
	// Check is how often a holder checks its connection. DefaultCheck
	// when zero.
	Check time.Duration
	// Timeout bounds a connection attempt and each statement (a try, a
	// check, the unlock). DefaultTimeout when zero.
	Timeout time.Duration
	// Settle is how long a Run that got the lock waits (checking its
	// connection at the end) before it runs f: long enough for a previous
	// holder whose connection broke to find out and stop its own f, so
	// that the two do not overlap. Check + Timeout when zero (the longest
	// a holder takes to find a loss).
	Settle time.Duration
	// Logger receives the leases taken and given back, and the failures
	// to reach the server (once per run of failures); a loss is Run's
	// error, for the caller to report. Never the DSN. The zero value
	// discards.
	Logger zerolog.Logger
}

func (c *Config) setDefaults() {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
	if c.Check == 0 {
		c.Check = DefaultCheck
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Settle == 0 {
		c.Settle = c.Check + c.Timeout
	}
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.DSN == "" {
		errs = append(errs, errors.New("lease: DSN is required"))
	}
	for name, d := range map[string]time.Duration{"Poll": c.Poll, "Check": c.Check, "Timeout": c.Timeout, "Settle": c.Settle} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("lease: %s must not be negative", name))
		}
	}
	return errors.Join(errs...)
}

// Leases are the leases of one namespace in one PostgreSQL database. Safe
// for concurrent use; nothing to close (each Run closes its connection).
type Leases struct {
	cfg  Config
	conn *pgx.ConnConfig
	log  zerolog.Logger
}

var _ lease.Lease = (*Leases)(nil)

// New checks cfg and parses its DSN; it connects to nothing (Run does).
func New(cfg Config) (*Leases, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cc, err := pgx.ParseConfig(cfg.DSN)
	if err != nil {
		// pgx's message may quote the DSN, password included: not wrapped.
		return nil, errors.New("lease: the PostgreSQL DSN does not parse")
	}
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	cc.RuntimeParams["application_name"] = "cgp-lease"
	// The server frees a vanished holder's lock once keepalives give up
	// on its socket: after about 10 + 3*5 s, instead of the system's
	// default of hours.
	cc.RuntimeParams["tcp_keepalives_idle"] = "10"
	cc.RuntimeParams["tcp_keepalives_interval"] = "5"
	cc.RuntimeParams["tcp_keepalives_count"] = "3"
	return &Leases{cfg: cfg, conn: cc, log: cfg.Logger.With().Str("component", "lease").Logger()}, nil
}

// Key is the advisory-lock key of the lease named name in namespace: the
// FNV-1a 64-bit hash of namespace, a zero byte and name. It must never
// change: processes of different releases must agree on it.
func Key(namespace, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(namespace))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// Run implements lease.Lease.
func (l *Leases) Run(ctx context.Context, name string, f func(ctx context.Context) error) error {
	key := Key(l.cfg.Namespace, name)
	log := l.log.With().Str("lease", name).Logger()
	conn, err := l.acquire(ctx, key, log)
	if err != nil {
		return err
	}
	log.Info().Msg("lease taken")

	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() { // exits when stop closes or the lease is lost
		defer close(watched)
		l.watch(conn, stop, func(err error) {
			cancel(fmt.Errorf("lease %s: %w: %v", name, lease.ErrLost, err))
		})
	}()
	ferr := f(fctx)
	close(stop)
	<-watched

	if cause := context.Cause(fctx); errors.Is(cause, lease.ErrLost) {
		// The caller handles the loss (it is returned): not logged here.
		_ = conn.Close(context.Background())
		if ferr != nil && !errors.Is(ferr, context.Canceled) {
			return errors.Join(cause, ferr)
		}
		return cause
	}
	l.release(conn, key, log)
	return ferr
}

// acquire connects and tries the lock every Poll until it is had and
// settled, and returns the connection holding it; or ctx's error when ctx
// ends first.
func (l *Leases) acquire(ctx context.Context, key int64, log zerolog.Logger) (*pgx.Conn, error) {
	var conn *pgx.Conn
	failing := false
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if conn != nil {
				_ = conn.Close(context.Background())
			}
			return nil, ctx.Err()
		case <-t.C:
		}
		got, err := l.try(ctx, &conn, key)
		switch {
		case err != nil && ctx.Err() == nil:
			if !failing {
				log.Warn().Err(err).Msg("lease: PostgreSQL unreachable; trying again")
			}
			failing = true
		case err == nil && failing:
			log.Info().Msg("lease: PostgreSQL reachable again")
			failing = false
		}
		if got {
			err := l.settle(ctx, conn)
			if err == nil {
				return conn, nil
			}
			_ = conn.Close(context.Background()) // frees the lock
			conn = nil
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			log.Warn().Err(err).Msg("lease: the connection failed as the lease was taken; trying again")
		}
		t.Reset(l.cfg.Poll)
	}
}

// try connects when *conn is nil and tries the lock once. A failure closes
// the connection (*conn nil: the next try connects again).
func (l *Leases) try(ctx context.Context, conn **pgx.Conn, key int64) (bool, error) {
	tctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	if *conn == nil {
		c, err := pgx.ConnectConfig(tctx, l.conn)
		if err != nil {
			// pgx names the host, user and database, never the password
			// (TestAnUnreachableServerIsWaitedFor checks).
			return false, fmt.Errorf("lease: connect to PostgreSQL: %w", err)
		}
		*conn = c
	}
	var got bool
	if err := (*conn).QueryRow(tctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&got); err != nil {
		_ = (*conn).Close(context.Background())
		*conn = nil
		return false, fmt.Errorf("lease: try the lock: %w", err)
	}
	return got, nil
}

// settle waits Settle, then checks conn: a previous holder that lost the
// lock has stopped by then.
func (l *Leases) settle(ctx context.Context, conn *pgx.Conn) error {
	t := time.NewTimer(l.cfg.Settle)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	cctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	if _, err := conn.Exec(cctx, "SELECT 1"); err != nil {
		return fmt.Errorf("lease: check the connection: %w", err)
	}
	return nil
}

// watch checks conn every Check until stop closes, and calls lost with
// the failure of the first check that fails (then returns).
func (l *Leases) watch(conn *pgx.Conn, stop <-chan struct{}, lost func(error)) {
	t := time.NewTicker(l.cfg.Check)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
		_, err := conn.Exec(ctx, "SELECT 1")
		cancel()
		if err != nil {
			lost(err)
			return
		}
	}
}

// release unlocks and closes conn. Closing alone would free the lock too,
// once the server ends the session; unlocking first hands it over at once.
func (l *Leases) release(conn *pgx.Conn, key int64, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
	defer cancel()
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", key).Scan(&ok); err != nil || !ok {
		log.Warn().Err(err).Bool("held", ok).Msg("lease: unlock failed; the session's end frees it")
	} else {
		log.Info().Msg("lease given back")
	}
	_ = conn.Close(context.Background())
}
